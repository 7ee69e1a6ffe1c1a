"""A report as blocks (headings, paragraphs, tables, images) and its Markdown and HTML renderings."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field


from bench.report.tables import FEW_SEEDS_MARK


@dataclass
class Block:
    kind: str  # "h1", "h2", "h3", "p", "code", "list", "table", "image"
    text: str = ""
    items: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    png: bytes = b""
    file: str = ""  # the image's path relative to the report


def to_markdown(blocks: list[Block]) -> str:
    out = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            out.append("#" * int(block.kind[1]) + " " + block.text)
        elif block.kind == "p":
            out.append(block.text)
        elif block.kind == "code":
            out.append("```bash\n" + block.text + "\n```")
        elif block.kind == "list":
            out.append("\n".join(f"- {item}" for item in block.items))
        elif block.kind == "table":
            cell = lambda text: text.replace("|", "\\|")  # noqa: E731
            lines = ["| " + " | ".join(map(cell, block.header)) + " |", "|" + "---|" * len(block.header)]
            lines += ["| " + " | ".join(map(cell, row)) + " |" for row in block.rows]
            out.append("\n".join(lines))
        elif block.kind == "image":
            alt = block.text.replace("[", "(").replace("]", ")")  # brackets would end the alt text
            out.append(f"![{alt}]({block.file})")
    return "\n\n".join(out) + "\n"


def _inline(text: str) -> str:
    """Escape, then `code` spans (the only inline markup the blocks use)."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
tr.paper td { background: #f3f3f3; color: #555; }
td.few { color: #999; }
pre { background: #f6f6f6; padding: 0.75em; overflow-x: auto; font-size: 0.85em; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


FEW_CLASS = ' class="few"'


def to_html(blocks: list[Block]) -> str:
    body = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            body.append(f"<{block.kind}>{_inline(block.text)}</{block.kind}>")
        elif block.kind == "p":
            body.append(f"<p>{_inline(block.text)}</p>")
        elif block.kind == "code":
            body.append(f"<pre><code>{html.escape(block.text)}</code></pre>")
        elif block.kind == "list":
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
        elif block.kind == "table":
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block.header)
            rows = "".join(
                ('<tr class="paper">' if len(row) > 2 and row[2] == "paper" else "<tr>")
                + "".join(f"<td{FEW_CLASS if FEW_SEEDS_MARK in c else ''}>{_inline(c)}</td>" for c in row)
                + "</tr>"
                for row in block.rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif block.kind == "image":
            data = base64.b64encode(block.png).decode("ascii")
            body.append(
                f'<figure><img alt="{html.escape(block.text)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(block.text)}</figcaption></figure>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Reproduction report</title>'
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
