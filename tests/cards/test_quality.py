"""The audit's teacher's checks on small cases: two questions on one front, one fact carded twice, a question that
shows its answer. The cases are the bundled deck's own, as issue 39 found them (fixed in the deck since)."""

from __future__ import annotations

import pytest

from cards.ingest.quality import (
    Face,
    asks_two_questions,
    contains_own_answer,
    half_width_marks,
    names_its_answer,
    near_duplicates,
)


@pytest.mark.parametrize(
    "front",
    [
        "对 `w` 调用 `w.numpy()` 会怎样？怎么改？",
        "`nn.MSELoss()` 的 `reduction` 默认是什么?返回的 loss 是什么形状?",
        "`x[:, 1]` 和 `x[:, 1:2]` 的形状各是？",
        "`nn.Conv2d(1, 6, 5)` 的两个参数分别是什么？",
        # two clauses that each ask, in Chinese: "…，怎么…？", "…是什么，有什么限制？", "…、什么 dtype？"
        "`nn.NLLLoss` 的 target 是什么形式、什么 dtype？",
        "比 `no_grad` 更省开销的推理上下文是什么，有什么限制？",
        "`num_workers > 0` 时，`__getitem__` 返回需要梯度的张量会怎样，怎么避免？",
        "`model.state_dict()['conv1.weight'].requires_grad` 是什么，为什么？",
        # a question, then a bare one; a parenthesis that asks
        "`x` 形状 `(J, K, L)`，`s = x.softmax(dim=0)`，哪个求和处处为 1，结果形状？",
        "`x = torch.tensor(2., requires_grad=True)`，`y = x ** 3`，怎样求 `y` 对 `x` 的二阶导（结果是多少）？",
        # two questions joined by 和/与/并且, or two things asked at once after 和
        "`p.register_hook(fn)` 注册的 `fn` 在什么时候被调用和收到什么参数？",
        "`fn` 什么时候被调用并且收到什么参数？",
        "`torch.bmm(a, b)` 的输入和输出形状？",
        "在 `with torch.no_grad():` 中算出 `y = x * 2`，`y.requires_grad` 和 `y.grad_fn` 是？",
        "升级 PyTorch 后，导入 `torch_scatter` 报 `undefined symbol`，原因和办法？",
    ],
)
def test_it_finds_a_front_that_asks_two_things(front: str) -> None:
    assert asks_two_questions(front)


@pytest.mark.parametrize(
    "front",
    [
        "`x.view(...)` 在什么情况下会报错？",
        "`a ? b` 与 `c ? d` 在 C 里是什么？",  # question marks inside code are not questions
        "运行下面的代码会输出什么？\n\n```python\nprint('?')\nprint('？')\n```",
        "不清零，分别调用 `l1.backward()` 和 `l2.backward()`，`.grad` 与一次 `(l1 + l2).backward()` 是什么关系？",
        # one question the Chinese way: "为什么" reaches over the clause after it; a comparison; context clauses
        "为什么 `y[:2] = 0` 能改变 `y`，而 `y[[0, 1]][0] = 0` 不能？",
        "`x.size()` 与 `x.shape` 有什么区别？",
        "对多元素张量 `y` 调用 `y.backward(gradient)`，`gradient` 的形状要与谁一致？",
        "列表 `ts` 中的张量形状相同，怎样一步求它们的逐元素之和？",
        "用类型和编号两个参数构造表示 `cuda:1` 的 `torch.device`？",
        "怎样查看张量 `x` 在哪个设备上（CPU、GPU 都适用）？",
        "在 `m` 里判断 `m` 是否是全连接层，比 `type(m) == nn.Linear` 更稳妥的写法？",
        "`w.normal_(0, 0.01)` 中的 `0.01` 是标准差还是方差？",
    ],
)
def test_it_leaves_a_front_that_asks_one_thing(front: str) -> None:
    assert not asks_two_questions(front)


def face(name: str, front: str, back: str, kind: str = "qa") -> Face:
    return Face(name, kind, front, back)


def test_it_pairs_one_fact_carded_in_two_notes_and_nothing_else() -> None:
    faces = [
        face("basics", "除了 `with` 语句，`torch.no_grad` 还能怎样用在整个函数上？", "作装饰器：`@torch.no_grad()`。"),
        face(
            "summary", "除了 `with` 语句,`torch.no_grad` 还能怎样使用?", "作为装饰器 `@torch.no_grad()` 修饰整个函数。"
        ),
        face("other", "`x.view(...)` 在什么情况下会报错？", "`x` 不连续时；先 `.contiguous()`。"),
        face("same names", "`torch.no_grad` 和 `with` 有什么关系？", "完全无关的另一句话，讲的是别的事情。"),
    ]
    [(a, b, why)] = near_duplicates(faces)
    assert (a.name, b.name, why) == ("basics", "summary", "same question")


# Issue 39's near-duplicate clusters in the bundled deck, and the card a teacher kept beside each.
SAME_FACT = [
    (  # requires-grad-default, in basics and in points: the same code asked, the same value answered
        face(
            "basics",
            "`torch.ones(2)` 新建的张量，`requires_grad` 默认是什么？",
            "`False`；需要梯度时传 `requires_grad=True`。",
        ),
        face("points", "`torch.ones(2)` 的 `requires_grad` 默认是？", "`False`"),
        "same question",
    ),
    (  # one-letter names do not tell two cards apart
        face(
            "basics",
            "`d = y.detach()` 与 `y` 是什么关系？",
            "共享同一块存储，但 `d` 不在计算图中，`requires_grad=False`。",
        ),
        face(
            "points",
            "`d = x.detach()` 得到的张量与 `x` 的数据是什么关系？",
            "共享同一块内存（`requires_grad=False`）。",
        ),
        "same question",
    ),
    (  # model.eval() vs torch.no_grad(), asked twice
        face(
            "basics",
            "只调用 `model.eval()`、不用 `no_grad`，前向时还会记录计算图吗？",
            "会：`eval()` 只改层的行为；另用 `torch.no_grad()`。",
        ),
        face(
            "summary",
            "`model.eval()` 与 `torch.no_grad()` 的区别是什么？",
            "`eval()` 只切换层的模式；`no_grad()` 才停止记录梯度。",
        ),
        "same question",
    ),
    (  # nonzero as_tuple x3: a parameter answered is a whole part of the call the other card answers
        face(
            "basics",
            "想让 `torch.nonzero` 直接返回可用于索引的下标，加什么参数？",
            "`as_tuple=True`：每维一个下标张量。",
        ),
        face("tips", "怎样让 `torch.nonzero` 返回与 `np.nonzero` 相同的格式？", "`torch.nonzero(x, as_tuple=True)`。"),
        "same answer",
    ),
    (  # a question card that repeats a mapping card
        face(
            "basics", "NumPy 里与 `torch.nonzero(x)` 对应的函数？", "`np.argwhere(x)`（torch 也有 `torch.argwhere`）。"
        ),
        face("tips", "PyTorch → Numpy: `torch.nonzero(x)` 对应什么？", "`np.argwhere(x)`", "mapping"),
        "same question",
    ),
]


@pytest.mark.parametrize(("a", "b", "why"), SAME_FACT)
def test_it_pairs_the_decks_near_duplicates_by_their_code_and_answers(a: Face, b: Face, why: str) -> None:
    assert near_duplicates([a, b]) == [(a, b, why)]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (  # the same code asked, different facts answered
            face("a", "`torch.where(cond, x, y)` 在 `cond` 为 True 的位置取 \\[...\\]，否则取 `y`。", "`x`", "cloze"),
            face("b", "`torch.where(cond, x, y)` 的输出是什么形状？", "`cond`、`x`、`y` 三者广播后的形状。"),
        ),
        (  # a bare value is the answer to many questions
            face("a", "`nn.Parameter(t)` 的 `requires_grad` 默认是什么？", "`True`"),
            face("b", "`a` 不需要梯度，`c = a + b` 的 `requires_grad` 是？", "`True`：有一个输入需要梯度即可。"),
        ),
        (  # a bare word in the answer, not a call: `step` stands in `optimizer.step`
            face("a", "每个 epoch 里，`scheduler.step()` 应在 \\[...\\] 之后调用。", "`optimizer.step()`", "cloze"),
            face("b", "`optimizer.step()` 之后 `loss1.backward()` 为什么报错？", "`step()` 原地修改了参数。"),
        ),
        (  # two stack shapes: the same names, different answers
            face("a", "`a` 形状 `(2, 3)`，`torch.stack([a, a], dim=1)` 的形状？", "`(2, 2, 3)`"),
            face("b", "`a` 形状 `(2, 3)`，`torch.stack([a, a], dim=-1)` 的形状？", "`(2, 3, 2)`"),
        ),
    ],
)
def test_it_leaves_cards_that_share_code_but_ask_different_facts(a: Face, b: Face) -> None:
    assert near_duplicates([a, b]) == []


def test_it_never_pairs_two_mapping_cards() -> None:
    one = "`np.less` 对应什么？"
    assert near_duplicates([face("a", one, "`x.lt`", "mapping"), face("b", one, "`x.lt`", "mapping")]) == []


@pytest.mark.parametrize(
    ("front", "back", "kind"),
    [
        ("PyTorch → Numpy: `torch.from_numpy(np.load(path))` 对应什么？", "`np.load(path)`", "mapping"),
        ("PyTorch → Numpy: `x.reshape; x.view` 对应什么？", "`x.reshape`", "mapping"),
        (
            "`torch.tensor([[1, 2], [3, 4]]).tolist()` 返回什么？",
            "`[[1, 2], [3, 4]]`：嵌套 list，元素是 Python `int`。",
            "qa",
        ),
    ],
)
def test_it_finds_a_card_whose_question_shows_its_answer(front: str, back: str, kind: str) -> None:
    assert contains_own_answer(face("card", front, back, kind))


@pytest.mark.parametrize(
    ("front", "back", "kind"),
    [
        ("PyTorch → Numpy: `x.put_` 对应什么？", "`x.put`", "mapping"),  # a name is not a part of a longer one
        ("Numpy → PyTorch: `x.reshape` 对应什么？", "`x.reshape; x.view`", "mapping"),  # the answer holds the question
        ("`optim.SGD([{'params': a}], lr=1e-5)` 中，参数组 `a` 的学习率是？", "`1e-5`：外层的默认学习率。", "qa"),
        ("`x.add(y)` 与 `x.add_(y)` 的区别是什么？", "`x.add_(y)` 原地修改 `x`。", "qa"),  # a comparison
        ("`s[j, :, :]`、`s[:, k, l]` 中哪一个求和为 1？", "`s[:, k, l]`", "qa"),  # a choice
        ("`w = x.detach().to('cuda')` 有什么问题？", "`w` 不是叶子。", "qa"),  # the code is the subject
        ("`torch.where(cond, x, y)` 在 `cond` 为 True 处取 \\[...\\]。", "`x`", "cloze"),
    ],
)
def test_it_leaves_a_question_whose_code_only_frames_the_answer(front: str, back: str, kind: str) -> None:
    assert not contains_own_answer(face("card", front, back, kind))


@pytest.mark.parametrize(
    ("markdown", "marks"),
    [
        ("`x` 的形状是?", ["的形状是?"]),
        ("返回新张量,`x` 不变", ["回新张量,`C` "]),
        ("形状 (N, C)：每行", ["形状 (N, C"]),
        ("移回 CPU 并转成 float64?", ["at64?"]),  # a Chinese question ends in "？" after a name too
        ("（每一维一个元组）?", ["个元组）?"]),
        ("形状 `(N, C)`：每行；`x.view(2, 3)` 是什么？", []),
        ("RuntimeError: a Tensor with 3 elements cannot be converted to Scalar；改用 `.item()`。", []),
        ("```python\nprint('中文', 1)\n```", []),
        # glued to a number or code, with no Chinese beside them (the deck's backs before issue 39's last pass)
        ("`(1, 6, 28, 28)`:32 - 5 + 1 = 28。", ["`C`:32 -"]),
        ("→池化→ 5;16 通道 × 5 × 5 = 400。", ["化→ 5;16 通"]),
        ("1(`batch_size=1`)。", ["1(`C`)"]),
        ("`gradient`:`backward(gradient=None)`。", ["`C`:`C`。"]),
        # English between Chinese keeps its marks: a ratio, a link, an error message, a formula
        ("按 8:2 随机切分", []),
        ("见 https://pytorch.org 的说明", []),
        ("TypeError: super(type, obj): obj must be an instance；应写 `super().__init__()`。", []),
        ("均匀分布 U(-1/√in_f, 1/√in_f)（`kaiming_uniform_`）", []),
        ("0.001(65 // 30 = 2)", []),  # no Chinese: not a Chinese sentence
    ],
)
def test_it_finds_half_width_marks_inside_chinese_sentences_only(markdown: str, marks: list[str]) -> None:
    assert half_width_marks(markdown) == marks


@pytest.mark.parametrize(
    ("front", "back", "kind"),
    [  # the deck's trivial cards before issue 39's last pass: the front spells the answer's one name
        ("`torch.stack` 对应 NumPy 的哪个函数？", "`np.stack`", "qa"),
        ("把 CPU 张量 `a` 转成 NumPy 数组（不复制数据）的调用是？", "`a.numpy()`", "qa"),
        ("自定义 `Dataset` 除了 `__getitem__`，还要实现 [...] 返回样本数，供 `len(ds)` 使用。", "`__len__`", "cloze"),
    ],
)
def test_it_finds_a_card_whose_front_spells_its_one_name_answer(front: str, back: str, kind: str) -> None:
    assert names_its_answer(face("card", front, back, kind))


@pytest.mark.parametrize(
    ("front", "back", "kind"),
    [
        ("Numpy → PyTorch: `np.stack` 对应什么？", "`torch.stack`", "mapping"),  # a table's row is the fact
        ("`torch.where(cond, x, y)` 的输出是什么形状？", "`cond`、`x`、`y` 三者广播后的形状。", "qa"),  # a variable
        ('`z` 已经在 CPU 上，`z.to("cpu")` 返回什么？', "`z` 本身，不复制。", "qa"),  # one letter
        ("为什么要写 `x = x.cuda()`？", "`cuda()` 返回副本。", "qa"),  # asks why
        ("`x.add(y)` 与 `x.add_(y)` 的区别是什么？", "`x.add_(y)` 原地修改 `x`。", "qa"),  # compares
        ("需要梯度的张量 `w` 怎样转成 NumPy 数组？", "`w.detach().numpy()`", "qa"),  # a chain of calls
        ("TF/NumPy 的 `keepdims=True` 在 torch 中写作 [...]", "`keepdim=True`", "cloze"),  # the spelling is the fact
        ("怎样把权重快照 `sd` 恢复到模型里？", "`model.load_state_dict(sd)`", "qa"),
    ],
)
def test_it_leaves_a_card_whose_answer_is_not_spelled_by_its_front(front: str, back: str, kind: str) -> None:
    assert not names_its_answer(face("card", front, back, kind))
