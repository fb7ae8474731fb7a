"""Markdown -> HTML: sanitised, highlighted, math left for KaTeX, remote images never loaded."""

from __future__ import annotations

import re
from html import unescape

import pytest

from cards.rendering import heading_anchor, is_remote_url, pygments_css, render_markdown


def test_it_drops_script_tags_and_their_content() -> None:
    html = render_markdown("前文<script>alert('x')</script>后文\n\n<script>\nalert(1)\n</script>\n")
    assert "<script" not in html and "alert" not in html
    assert "前文" in html and "后文" in html


def test_it_strips_event_handler_attributes() -> None:
    html = render_markdown('<img src="a.png" onerror="alert(1)"> <b onclick="x()">粗</b>')
    assert "onerror" not in html and "onclick" not in html and "alert" not in html
    assert "<b>粗</b>" in html


def test_it_never_emits_javascript_links() -> None:
    html = render_markdown(
        '[点我](javascript:alert(1)) <a href="javascript:alert(2)">也点我</a> <a href="JaVaScRiPt:x">3</a>'
    )
    assert not re.search(r"""(href|src)\s*=\s*["']?\s*javascript:""", html, re.IGNORECASE)
    assert '<a rel="noopener noreferrer nofollow">也点我</a>' in html


def test_it_keeps_ordinary_links_with_a_safe_rel() -> None:
    html = render_markdown("[文档](https://pytorch.org/docs)")
    assert '<a href="https://pytorch.org/docs" rel="noopener noreferrer nofollow">文档</a>' in html


def test_it_turns_remote_images_into_links() -> None:
    html = render_markdown(
        '![示意图](https://example.com/a.png)\n\n<img src="https://raw.githubusercontent.com/x/y.png" align=center/>\n'
    )
    assert "<img" not in html
    assert (
        '<a href="https://example.com/a.png" class="remote-image" rel="noopener noreferrer nofollow">[示意图]</a>'
        in html
    )
    assert 'href="https://raw.githubusercontent.com/x/y.png"' in html


@pytest.mark.parametrize(
    "src",
    [
        "\\\\evil.example/a.png",  # \\host: backslashes are slashes to a browser
        "/\\evil.example/a.png",  # /\\host
        "\\/evil.example/a.png",
        " //evil.example/a.png",  # a leading space is stripped
        "&#9;//evil.example/a.png",  # so is any C0 control
        "\x01//evil.example/a.png",
        "/&#9;/evil.example/a.png",  # tabs and newlines inside are removed
        "/&#10;/evil.example/a.png",
        "ht&#9;tps://evil.example/a.png",  # ... even inside the scheme
        "///evil.example/a.png",
    ],
)
def test_it_turns_images_a_browser_would_fetch_from_another_host_into_links(src: str) -> None:
    """The remote check reads the URL as a browser does (WHATWG URL parsing), not as written."""
    html = render_markdown(f'<img src="{src}" alt="x">')
    assert "<img" not in html, html
    assert 'class="remote-image"' in html and "evil.example/a.png" in html


@pytest.mark.parametrize(
    "src", ["![a](\\\\evil.example/a.png)", "![a](/\\evil.example/a.png)", "![a]( //evil.example/a.png)"]
)
def test_it_judges_markdown_images_the_same_way(src: str) -> None:
    """Markdown's own escapes may turn a backslash into ``%5C`` (a path a browser keeps local) or not: either
    way no image is fetched from evil.example."""
    rendered = render_markdown(src)
    kept = [unescape(value) for value in re.findall(r'<img[^>]*src="([^"]*)"', rendered)]
    assert not [value for value in kept if is_remote_url(value)], rendered


@pytest.mark.parametrize(
    ("url", "remote"),
    [
        ("a.png", False),
        ("/static/a.png", False),
        ("img/a%5C.png", False),
        ("/%5Cevil.example/a.png", False),  # a percent-encoded backslash stays a path
        ("https://e.example/a.png", True),
        ("\\\\e.example", True),
        ("/\\e.example", True),
        (" //e.example", True),
        ("\x00\x1f//e.example", True),
        ("/\t/e.example", True),
        ("java\nscript:alert(1)", True),
    ],
)
def test_it_reads_a_url_as_a_browser_does(url: str, remote: bool) -> None:
    assert is_remote_url(url) is remote


def test_it_escapes_markup_smuggled_into_an_image_alt_text() -> None:
    html = render_markdown('<img src="https://e.com/a.png" alt="<b>x</b>&quot;">')
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_it_cannot_be_tricked_by_markup_inside_an_image_attribute() -> None:
    html = render_markdown('<img src="https://e.com/a.png" alt="x><script>alert(1)</script><b onclick=y>">')
    assert "<script" not in html and "<b " not in html and "<img" not in html
    assert 'href="https://e.com/a.png"' in html and "&lt;script&gt;" in html


def test_it_marks_math_for_katex_auto_render() -> None:
    html = render_markdown("梯度 $\\frac{df}{dx} < 1$ 如下\n\n$$\na_{ij}\n$$\n")
    assert '<span class="math inline">\\(\\frac{df}{dx} &lt; 1\\)</span>' in html
    assert '<div class="math display">\\[a_{ij}\\]</div>' in html


def test_it_does_not_take_prices_for_math() -> None:
    assert "math" not in render_markdown("花了 $5 和 $6。")


def test_it_keeps_chinese_text_intact() -> None:
    text = "张量（Tensor）类似于NumPy的ndarray，但还可以在GPU上使用来加速计算。"
    assert f"<p>{text}</p>" in render_markdown(text)


def test_it_highlights_code_with_pygments_classes() -> None:
    html = render_markdown("```python\ndef f(x):\n    return x  # 注释\n```\n")
    assert '<div class="highlight"><pre><code class="language-python">' in html
    assert '<span class="k">def</span>' in html
    assert "注释" in html


def test_it_escapes_code_in_unknown_or_missing_languages() -> None:
    html = render_markdown("```nosuchlang\n<b>x</b>\n```\n\n```\n<i>y</i>\n```\n")
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html and "&lt;i&gt;y&lt;/i&gt;" in html


def test_it_gives_headings_the_anchor_ids_cards_store() -> None:
    html = render_markdown("## NLLLoss与CrossEntropyLoss\n\n## 参考\n\n## 参考\n")
    assert f'<h2 id="{heading_anchor("NLLLoss与CrossEntropyLoss")}">' in html
    assert '<h2 id="参考">' in html and '<h2 id="参考-1">' in html


def test_it_hides_front_matter() -> None:
    html = render_markdown("---\ntitle: 笔记\ndate: 2019-09-10\n---\n\n正文\n")
    assert "title" not in html and "<p>正文</p>" in html


def test_it_ships_a_stylesheet_for_the_highlight_classes() -> None:
    css = pygments_css()
    assert ".highlight .k" in css


def test_every_page_serves_the_stylesheet_for_the_highlight_classes() -> None:
    """static/css/code.css (linked from base.html) is pygments_css() of the installed Pygments."""
    from pathlib import Path

    shipped = Path(__file__).resolve().parents[2] / "static" / "css" / "code.css"
    assert shipped.read_text() == pygments_css() + "\n", (
        'regenerate: python -c "from cards.rendering import pygments_css; '
        "open('static/css/code.css','w').write(pygments_css() + '\\n')\""
    )
    assert "css/code.css" in (shipped.parents[2] / "templates" / "base.html").read_text()


def test_it_expands_reference_links_only_in_proportion_to_the_text() -> None:
    """One long target used ten thousand times rendered 300 MB from 40 KB (issue 36: CSV imports stored 242 MB)."""
    hostile = "[a]: http://x.org/" + "x" * 30_000 + "\n\n" + "[a]" * 10_000
    html = render_markdown(hostile)
    assert len(html) < 2 * len(hostile) and "[a]" in html
    assert 'href="http://x.org/doc"' in render_markdown("See [the docs].\n\n[the docs]: http://x.org/doc")
