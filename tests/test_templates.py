"""pipeline.jacquard.templates: sandboxed Jinja2 rendering of prompt templates (seed 004 §2.2).

Pure Python: no database, no Django settings.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.jacquard import templates
from pipeline.jacquard.templates import (
    MAX_CALL_DEPTH,
    MAX_ITERATIONS,
    MAX_OUTPUT_CHARS,
    TemplateError,
    compile_template,
    render_string,
    validate_template,
)
from projects.errors import NovelsiteError


def fails(source: str, context: dict | None = None) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        render_string(source, context or {})
    return info.value


# --- Normal rendering -----------------------------------------------------------------------------


def test_loops_filters_conditions_and_set() -> None:
    source = (
        "{% set title = '第' ~ chapter ~ '章' %}{{ title }}\n"
        "{% for c in characters if c.active %}"
        "{{ loop.index }}. {{ c.name }}（{{ c.role|default('配角') }}）{% if not loop.last %}；{% endif %}"
        "{% endfor %}\n"
        "{{ rules|join('、') }} {{ words|length }} {{ '%03d'|format(7) }} {{ score|round(1) }}"
    )
    context = {
        "chapter": 48,
        "characters": [
            {"name": "林枫", "role": "主角", "active": True},
            {"name": "赵明", "active": True},
            {"name": "无名", "active": False},
        ],
        "rules": ["不杀", "守信"],
        "words": "abc",
        "score": 3.14159,
    }
    assert render_string(source, context) == "第48章\n1. 林枫（主角）；2. 赵明（配角）\n不杀、守信 3 007 3.1"


def test_macros_namespaces_call_blocks_and_loop_controls() -> None:
    source = (
        "{% macro item(name, n=1) %}<{{ name }}×{{ n }}>{% endmacro %}"
        "{% macro box() %}[{{ caller() }}]{% endmacro %}"
        "{{ item('剑') }}{{ item('盾', 2) }}{% call box() %}!{% endcall %}"
        "{% set ns = namespace(total=0) %}"
        "{% for i in range(10) %}{% if i == 4 %}{% break %}{% endif %}{% set ns.total = ns.total + i %}{% endfor %}"
        "{{ ns.total }}"
        "{% set block %}[{{ 'x' * 3 }}]{% endset %}{{ block }}"
        "{% filter upper %}abc{% endfilter %}"
    )
    assert render_string(source, {}) == "<剑×1><盾×2>[!]6[xxx]ABC"


def test_recursive_loops_and_loop_length() -> None:
    tree = [{"n": "a", "kids": [{"n": "b", "kids": [{"n": "c", "kids": []}]}]}]
    source = "{% for x in tree recursive %}({{ x.n }}{{ loop(x.kids) }}){% endfor %}"
    assert render_string(source, {"tree": tree}) == "(a(b(c)))"
    gen = (i for i in range(3))
    source = "{% for x in xs %}{{ loop.index }}/{{ loop.length }} {% endfor %}"
    assert render_string(source, {"xs": gen}) == "1/3 2/3 3/3 "


def test_whitespace_follows_jinja_defaults() -> None:
    assert render_string("a\n{% if true %}\nb\n{% endif %}\n", {}) == "a\n\nb\n"
    assert render_string("a\n{%- if true %}\nb\n{%- endif %}", {}) == "a\nb"


def test_autoescape_is_off() -> None:
    assert render_string("{{ x }}", {"x": "<reply>&</reply>"}) == "<reply>&</reply>"


def test_output_at_the_cap_is_fine() -> None:
    assert len(render_string("{{ 'x' * n }}", {"n": MAX_OUTPUT_CHARS})) == MAX_OUTPUT_CHARS


def test_budgets_are_per_render() -> None:
    source = "{% for i in range(n) %}{% endfor %}ok"
    for _ in range(3):
        assert render_string(source, {"n": MAX_ITERATIONS - 10}) == "ok"


def test_compiled_templates_are_cached_by_source() -> None:
    source = "cached {{ x }}"
    assert compile_template(source) is compile_template(source)
    assert render_string(source, {"x": 1}) == "cached 1"
    assert render_string(source, {"x": 2}) == "cached 2"


# --- Errors: undefined, syntax --------------------------------------------------------------------


def test_undefined_variable_is_an_error_naming_it() -> None:
    error = fails("第一行\n{{ protagonist.name }}")
    assert error.kind == "undefined"
    assert "'protagonist' is undefined" in error.message
    assert error.lineno == 2 and error.message.startswith("line 2:")


def test_undefined_attribute_inside_a_macro_gives_the_macro_line() -> None:
    error = fails("a\n{% macro m() %}\n  {{ state.missing }}\n{% endmacro %}\n{{ m() }}", {"state": {}})
    assert error.kind == "undefined"
    assert "missing" in error.message
    assert error.lineno == 3


def test_syntax_error_has_the_line_number() -> None:
    error = fails("line one\nline two\n{% for x in %}\n{% endfor %}")
    assert error.kind == "syntax"
    assert error.lineno == 3
    assert "line 3" in error.message


def test_unclosed_block_is_a_syntax_error() -> None:
    assert fails("{% if x %}never closed").kind == "syntax"


def test_template_error_is_a_novelsite_error() -> None:
    error = fails("{{ nope }}")
    assert isinstance(error, NovelsiteError)
    assert error.code == "invalid_template"
    assert error.extra["kind"] == "undefined"
    assert str(error) == error.message


def test_other_runtime_errors() -> None:
    error = fails("\n{{ 1 / 0 }}")
    assert error.kind == "error"
    assert "ZeroDivisionError" in error.message and error.lineno == 2


# --- Sandbox escapes: every one refused, nothing executed -----------------------------------------

ESCAPES = [
    ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "security"),
    ("{{ ().__class__.__base__ }}", "security"),
    ("{{ cycler.__init__.__globals__ }}", "security"),
    ("{{ joiner.__init__.__globals__['os'] }}", "security"),
    ("{{ namespace.__init__.__globals__ }}", "security"),
    ("{{ self._TemplateReference__context }}", "security"),
    ("{{ self.__dict__ }}", "security"),
    ("{{ range.__call__ }}", "security"),
    ("{{ range.__globals__ }}", "security"),
    ("{{ 'a'.format.__globals__ }}", "security"),
    ("{{ '{0.__class__.__mro__}'.format(1) }}", "security"),
    ("{{ x.__class__ }}", "security"),
    ("{{ x['__class__'] }}", "security"),
    ("{{ x|attr('__class__') }}", "security"),
    ("{{ dict.mro() }}", "security"),
    ("{{ loop.__class__ }}", "security"),  # no loop outside a for, but __class__ is refused first
    ("{% for i in [1] %}{{ loop.__class__ }}{% endfor %}", "security"),
    ("{% set y = [].append(1) %}", "security"),
    ("{{ [].pop() }}", "security"),
    ("{{ lipsum.__globals__['os'] }}", "undefined"),  # lipsum is removed from the globals
    ("{{ config }}", "undefined"),
    ("{{ request }}", "undefined"),
    ("{{ settings.SECRET_KEY }}", "undefined"),
    ("{% include 'base.txt' %}", "security"),
    ("{% import 'macros.txt' as m %}", "security"),
    ("{% from 'macros.txt' import m %}", "security"),
    ("{% extends 'base.txt' %}", "security"),
]


@pytest.mark.parametrize("source, kind", ESCAPES)
def test_sandbox_escapes_are_refused(source: str, kind: str) -> None:
    error = fails(source, {"x": "text"})
    assert error.kind == kind, error.message
    for leak in ("<class", "subclasses", "builtins", "os.", "SECRET"):
        assert leak not in error.message


def test_mutating_context_data_is_refused_and_changes_nothing() -> None:
    items, mapping = ["a"], {"k": 1}
    for source in (
        "{% set _ = items.append('b') %}",
        "{{ items.extend([1, 2]) }}",
        "{{ items.clear() }}",
        "{{ mapping.update({'k': 2}) }}",
        "{{ mapping.pop('k') }}",
        "{{ mapping.setdefault('z', 3) }}",
    ):
        assert fails(source, {"items": items, "mapping": mapping}).kind == "security"
    assert items == ["a"] and mapping == {"k": 1}


def test_alters_data_callables_are_refused_and_not_called() -> None:
    calls = []

    class Record:
        def delete(self) -> None:
            calls.append("delete")

        delete.alters_data = True  # the Django convention the sandbox honours

        def _private(self) -> None:
            calls.append("private")

    assert fails("{{ r.delete() }}", {"r": Record()}).kind == "security"
    assert fails("{{ r._private() }}", {"r": Record()}).kind == "security"
    assert calls == []


# --- Size caps ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ 'x' * 10000000 }}",
        "{{ 'x' * 10000000000 }}",
        "{{ 10000000000 * 'x' }}",
        "{{ ['x'] * 10000000000 }}",
        "{{ ['x' * 100000] * 100 }}",
        "{{ 'x'|center(1000000000) }}",
        "{{ 'x'.ljust(1000000000) }}",
        "{{ 'x'.zfill(1000000000) }}",
        "{{ 'x'|indent(1000000000, true) }}",
        "{{ '%1000000000d' % 1 }}",
        "{{ '%*d' % (1000000000, 1) }}",
        "{{ '%1000000000d'|format(1) }}",
        "{{ '{:>1000000000}'.format(1) }}",
        "{{ '{:>{}}'.format(1, 1000000000) }}",
        "{{ 'ab'.replace('', 'x' * 100000) }}",
        "{{ ('ab'|safe).replace('', 'x' * 100000) }}",
        "{{ ('x'|safe).center(1000000000) }}",
        "{{ ('x' * 1000)|replace('x', 'y' * 1000) }}",
        "{{ ('x' * 100000).join(['a'] * 1000) }}",
        "{{ 2 ** 100000000 }}",
        "{% set ns = namespace(n=3) %}{% for i in range(30) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
        "{{ (1).to_bytes(1000000000, 'big') }}",
        "{{ [1, 2]|tojson(indent=100000000) }}",
        "{{ [1]|batch(1000000000, 'x')|list }}",
        "{{ dict.fromkeys(range(100000), 'x' * 100000) }}",
        "{{ dict.fromkeys(range(100000), 'x' * 100000)|string }}",
        "{{ range(20000)|map(attribute='nope', default='y' * 100000)|list|upper }}",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "{% set ns = namespace(l=[0]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
        "{% for i in range(10000) %}{{ 'x' * 100 }}{% endfor %}",
        "{% macro m() %}{% for i in range(10000) %}{{ 'x' * 100000 }}{% endfor %}{% endmacro %}{% set y = m() %}",
        "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% else %}{{ 'x' * 100000 }}{% endif %}{% endmacro %}"
        "{% set y = m(12) %}",
    ],
)
def test_oversized_values_are_refused_quickly(source: str) -> None:
    start = time.perf_counter()
    error = fails(source)
    assert error.kind in ("too_large", "too_many_iterations"), error.message
    assert time.perf_counter() - start < 1.0


def test_the_string_repetition_is_refused_before_it_is_built() -> None:
    error = fails("{{ 'x' * 10000000 }}")
    assert error.kind == "too_large"
    assert "10000000" in error.message and error.lineno == 1


def test_output_cap() -> None:
    error = fails("{% for i in range(3000) %}{{ 'x' * 100 }}{% endfor %}")
    assert error.kind == "too_large"
    assert str(MAX_OUTPUT_CHARS) in error.message


def test_big_context_data_can_still_be_used() -> None:
    chapters = ["章" * 50_000 for _ in range(20)]  # 1M characters of trusted input
    source = "{% for c in chapters %}{{ c|truncate(10) }}{{ c|length }};{% endfor %}"
    assert render_string(source, {"chapters": chapters}).count("50000;") == 20


def test_oversized_source_is_refused() -> None:
    error = fails("x" * (templates.MAX_SOURCE_CHARS + 1))
    assert error.kind == "too_large"


# --- Iterations, recursion, time ------------------------------------------------------------------


def test_nested_loops_hit_the_iteration_cap_quickly() -> None:
    start = time.perf_counter()
    error = fails("{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}")
    assert error.kind in ("too_many_iterations", "too_large")
    assert time.perf_counter() - start < 1.0
    error = fails("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
    assert error.kind == "too_many_iterations"
    assert str(MAX_ITERATIONS) in error.message


def test_a_range_larger_than_the_sandbox_allows() -> None:
    assert fails("{% for i in range(10000000) %}{% endfor %}").kind == "too_many_iterations"


def test_recursive_loops_are_counted() -> None:
    chain: dict = {"kids": []}
    node = chain
    for _ in range(40):
        child = {"kids": []}
        node["kids"] = [child] * 2  # a DAG that is 2**40 nodes as a tree
        node = child
    source = "{% for x in [tree] recursive %}{{ loop(x.kids) }}{% endfor %}"
    start = time.perf_counter()
    assert fails(source, {"tree": chain}).kind in ("too_many_iterations", "too_deep")
    assert time.perf_counter() - start < 1.0


def test_deep_macro_recursion_is_refused_cleanly() -> None:
    start = time.perf_counter()
    error = fails("{% macro down(n) %}{{ down(n + 1) }}{% endmacro %}{{ down(0) }}")
    assert error.kind == "too_deep"
    assert str(MAX_CALL_DEPTH) in error.message
    assert time.perf_counter() - start < 1.0


def test_exponential_macro_recursion_hits_the_iteration_cap() -> None:
    start = time.perf_counter()
    error = fails("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}")
    assert error.kind == "too_many_iterations"
    assert time.perf_counter() - start < 1.0


def test_modest_recursion_is_fine() -> None:
    source = "{% macro count(n) %}{% if n %}{{ n }}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(20) }}"
    assert render_string(source, {}) == "".join(str(i) for i in range(20, 0, -1))


def test_self_recursive_block_is_refused() -> None:
    assert fails("{% block a %}{{ self.a() }}{% endblock %}").kind == "too_deep"


def test_deeply_nested_source_is_refused() -> None:
    error = fails("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}")
    assert error.kind in ("too_deep", "syntax")


def test_slow_loops_time_out(monkeypatch) -> None:
    monkeypatch.setattr(templates, "MAX_RENDER_SECONDS", 0.2)
    big = list(range(100_000))
    start = time.perf_counter()
    error = fails("{% for i in range(10000) %}{{ big|sort|first }}{% endfor %}", {"big": big})
    assert error.kind == "timeout"
    assert time.perf_counter() - start < 2.0


# --- validate_template ----------------------------------------------------------------------------


def test_validate_template_accepts_a_good_template() -> None:
    assert validate_template("{{ name }} {% for x in xs %}{{ x }}{% endfor %}", {"name": "a", "xs": [1]}) == []


def test_validate_template_reports_errors() -> None:
    (message,) = validate_template("ok\n{{ hero.name }}", {"villain": {}})
    assert message == "line 2: 'hero' is undefined"
    (message,) = validate_template("{% if %}", {})
    assert message.startswith("line 1: syntax error")
    (message,) = validate_template("{{ ''.__class__ }}", {})
    assert "unsafe" in message
    assert validate_template("{{ 'x' * 10000000 }}", {})


def test_validate_template_only_renders_the_branches_taken() -> None:
    assert validate_template("{% if flag %}{{ missing }}{% endif %}", {"flag": False}) == []
    assert validate_template("{% if flag %}{{ missing }}{% endif %}", {"flag": True})


# --- Purity ---------------------------------------------------------------------------------------


def test_jacquard_modules_do_not_import_django() -> None:
    code = (
        "import sys; import pipeline.jacquard.templates, pipeline.jacquard.filament; "
        "print([m for m in sys.modules if m.startswith('django')])"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
