"""Shared base for the course tests: a team with four personas (its owner, an editor, a member who is not
an editor, and an outsider in no team of theirs), and notes that give every kind of card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.test import TestCase

from courses import services
from courses.models import Upload
from teams import services as team_services
from teams.models import Membership, Team
from tests.cards.factories import make_user

# Every kind: a cloze (a bold term), two qa (a term list), four mapping (a table), one output (code + output).
AUTOGRAD = """\
# 自动求导

## 计算图

调用 **`backward()`** 会沿计算图把梯度累加到叶子张量的 `.grad` 上。

- `requires_grad`：张量是否需要梯度
- `grad_fn`：创建该张量的函数

## 常用函数

| PyTorch | NumPy |
| --- | --- |
| `torch.cat` | `np.concatenate` |
| `x.clamp` | `np.clip` |

## 输出

```python
import torch
x = torch.tensor([1.0, 2.0])
print(x * 3)
```

```
tensor([3., 6.])
```
"""
SHAPES = """\
# 形状

## 查看形状

张量的形状用 **`x.shape`** 查看，它是一个 `torch.Size`。

> [!NOTE]
> `x.size()` 与 `x.shape` 相同。
"""
CURATED = """\
[[card]]
id = "shape-attribute"
section = "查看形状"
kind = "qa"
front = "怎样查看张量 `x` 的形状?"
back = "`x.shape`(或 `x.size()`)。"
"""


class CourseTestCase(TestCase):
    owner: AbstractBaseUser
    editor: AbstractBaseUser
    member: AbstractBaseUser
    outsider: AbstractBaseUser
    team: Team

    @classmethod
    def setUpTestData(cls) -> None:
        cls.owner = make_user("olivia", time_zone="UTC")
        cls.editor = make_user("edith", time_zone="UTC")
        cls.member = make_user("max", time_zone="UTC")
        cls.outsider = make_user("oscar", time_zone="UTC")
        cls.team = team_services.create_team(cls.owner, "Tensor Tamers", "UTC")
        team_services.join(cls.team, cls.editor)
        team_services.join(cls.team, cls.member)
        Membership.objects.filter(team=cls.team, user=cls.editor).update(role=Membership.Role.EDITOR)
        other = team_services.create_team(cls.outsider, "Other team", "UTC")
        cls.other_team = other

    def fresh_team(self) -> Team:
        self.team.refresh_from_db()
        return self.team

    def preview(
        self, files: list[tuple[str, bytes | str]], user: AbstractBaseUser | None = None, **caps: Any
    ) -> Upload:
        """Files as an editor sends them, through gather and preview, with the settings' caps (or these)."""
        limits = services.Caps.from_settings()
        if caps:
            limits = services.Caps(**{**limits.__dict__, **caps})
        encoded = [(name, data.encode() if isinstance(data, str) else data) for name, data in files]
        incoming = services.gather(encoded, limits)
        return services.preview(self.fresh_team(), user or self.editor, incoming, limits)

    def import_notes(self, files: list[tuple[str, bytes | str]]) -> services.Confirmed:
        upload = self.preview(files)
        return services.confirm(upload, self.editor)


SCALE = """\
slug = "scale-by-three"
title = "Scale by three"
prompt_zh = "把张量的每个元素乘以三。"
prompt_en = "Multiply every element of a tensor by three."
entry_point = "solution"
starter = "def solution(x):\\n    pass\\n"
reference = "def solution(x):\\n    return x * 3\\n"

[source]
note = "autograd.md"
heading = "计算图"

[[examples]]
name = "small"
args = ["torch.tensor([1.0, 2.0])"]

[[hidden]]
name = "random"
args = ["torch.randn(3, 4, generator=g)"]
repeat = 2
"""


def write_course(folder: Path, *, drills: bool = True) -> Path:
    """A course folder in the repository's layout: two notes, a cards file and a drill."""
    (folder / "cards").mkdir(parents=True)
    (folder / "autograd.md").write_text(AUTOGRAD, encoding="utf-8")
    (folder / "shapes.md").write_text(SHAPES, encoding="utf-8")
    (folder / "cards" / "shapes.toml").write_text(CURATED, encoding="utf-8")
    if drills:
        (folder / "drills" / "autograd").mkdir(parents=True)
        (folder / "drills" / "autograd" / "scale-by-three.toml").write_text(SCALE, encoding="utf-8")
    return folder
