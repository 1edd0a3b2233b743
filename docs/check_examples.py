"""Run the Python examples of the documentation pages and report the ones that fail.

    python docs/check_examples.py [--data ../shared/data/n5] [PAGE.md ...]

Every ```python block of a page (default: docs/*.md and the README) runs in
order in one namespace per page, in a scratch directory prepared with what the
pages refer to: the demo's output (``demo-out/``), Paintera's
``paintera_export_test.n5`` (linked from ``--data``; blocks that use it are
skipped when it is missing) and a small ``labels.npy``. Blocks that need a
running dask scheduler (``tcp://``) are skipped. Needs the ``zarr``, ``dask``
and ``cli`` extras. Exit status 1 if a block fails.

Results shown in comments are checked, doctest style: an expression statement
whose line ends with ``# -> TEXT`` must have a ``repr`` that TEXT starts with,
followed by nothing or by a remark after one of `` :,;(`` (``x.shape  # ->
(3, 2): N5 order`` checks ``(3, 2)``). Other comments are prose.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import re
import sys
import tempfile
import textwrap
import tokenize
import traceback
from pathlib import Path

import numpy as np

DOCS = Path(__file__).resolve().parent
README = DOCS.parent / "README.md"
PAINTERA = "paintera_export_test.n5"
ARROW = "# ->"


def python_blocks(page):
    """(line number, code) of every ```python block (indented ones included)."""
    text = page.read_text()
    for match in re.finditer(r"^([ \t]*)```python\n(.*?)^\1```", text, re.S | re.M):
        yield text.count("\n", 0, match.start()) + 2, textwrap.dedent(match.group(2))


def expected_results(code):
    """{line number in the block: text after ``# ->``} of the comments that show a result."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT and token.string.startswith(ARROW):
            found[token.start[0]] = token.string[len(ARROW):].strip()
    return found


def shows(expected, value):
    """Whether the comment text ``expected`` shows ``repr(value)`` (a remark may follow)."""
    text = repr(value)
    return expected == text or (expected.startswith(text) and expected[len(text)] in " :,;(")


def run_block(code, where, namespace):
    """Run ``code`` statement by statement; returns the mismatches of its ``# ->`` comments."""
    expected = expected_results(code)
    path, first_line = where.rsplit(":", 1)
    mismatches = []
    for node in ast.parse(code).body:
        line = node.end_lineno
        ast.increment_lineno(node, int(first_line) - 1)
        if line in expected and isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), path, "eval"), namespace)  # noqa: S307
            if not shows(expected[line], value):
                mismatches.append(f"line {int(first_line) + line - 1}: the comment shows {expected[line]!r}, "
                                  f"the code gives {value!r}")
        elif line in expected:
            mismatches.append(f"line {int(first_line) + line - 1}: '# ->' after a statement that is not "
                              "an expression")
        else:
            exec(compile(ast.Module([node], type_ignores=[]), path, "exec"), namespace)  # noqa: S102
    return mismatches


def prepare(scratch, data):
    from n5mscodecs.cli import main as n5ms
    from n5mscodecs.demo import voronoi_labels

    demo = scratch / "shared"
    demo.mkdir()
    if n5ms(["demo", "--out", str(demo / "demo-out"), "--quiet"]) != 0:
        raise SystemExit("check_examples: n5ms demo failed")
    np.save(demo / "labels.npy", voronoi_labels((40, 200, 200), 100))
    paintera = data / PAINTERA
    return demo, paintera if paintera.is_dir() else None


def run_page(page, scratch, demo, paintera):
    workdir = scratch / page.stem
    workdir.mkdir()
    for name in ("demo-out", "labels.npy"):
        (workdir / name).symlink_to(demo / name)
    if paintera is not None:
        (workdir / PAINTERA).symlink_to(paintera)
    os.chdir(workdir)
    namespace = {"__name__": "__main__"}
    results = []
    for line, code in python_blocks(page):
        where = f"{page.name}:{line}"
        if "tcp://" in code:
            results.append((where, "skipped (needs a dask scheduler)"))
            continue
        if PAINTERA in code and paintera is None:
            results.append((where, f"skipped (no {PAINTERA})"))
            continue
        try:
            mismatches = run_block(code, where, namespace)
        except Exception:  # noqa: BLE001 - report every failing block
            results.append((where, "FAILED\n" + textwrap.indent(traceback.format_exc(limit=3), "    ")))
        else:
            results.append((where, "FAILED\n" + textwrap.indent("\n".join(mismatches), "    ")
                            if mismatches else "ok"))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path)
    parser.add_argument("--data", type=Path, default=DOCS.parents[1] / "shared" / "data" / "n5")
    args = parser.parse_args(argv)
    pages = [p.resolve() for p in args.pages] or [*sorted(DOCS.glob("*.md")), README]
    cwd = os.getcwd()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="n5ms-doc-examples-") as tmp:
        scratch = Path(tmp)
        demo, paintera = prepare(scratch, args.data.resolve())
        try:
            for page in pages:
                for where, status in run_page(page, scratch, demo, paintera):
                    print(f"{where}: {status}")
                    failed += status.startswith("FAILED")
        finally:
            os.chdir(cwd)
    print(f"check_examples: {failed} failed" if failed else "check_examples: all examples ran")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
