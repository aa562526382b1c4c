"""Sandboxed Jinja2 rendering for prompt templates (seed 004 §2.2, DESIGN §6).

Pure Python: no Django, no database. ``render_string`` is the one way to render a template, used by the
renderer plugin and by the admin's validation of user-edited templates (``validate_template``), so what the
admin accepts is exactly what the pipeline will run.

The environment is Jinja2's ``ImmutableSandboxedEnvironment``: no access to private or internal attributes
(``__class__``, ``mro``, ``gi_frame``…), no mutation of lists, dicts and sets, ``str.format`` sandboxed,
``range`` capped at 100 000 items. ``StrictUndefined``: a missing variable is an error, never an empty
string. ``autoescape`` off (prompts are not HTML). No loader: ``include``, ``import`` and ``extends`` are
refused. Otherwise Jinja's defaults apply (``trim_blocks`` off: use ``{%- … -%}`` to eat whitespace),
plus the ``loopcontrols`` extension (``{% break %}``, ``{% continue %}``).

On top of the sandbox, each render runs under a budget, so that a user-edited template cannot hang or
exhaust a worker:

* the output is at most ``MAX_OUTPUT_CHARS`` characters;
* a string or list built by the template (``*``, ``+``, ``~``, ``%``, padding filters and methods,
  ``join``, ``replace``…) is checked *before* it is built: at most ``MAX_VALUE_CHARS`` characters
  (an estimate of ``str(value)`` for lists and dicts); integers at most ``MAX_INT_BITS`` bits;
* all the text produced along the way (including macro bodies, ``{% set %}`` blocks and filter results)
  is at most ``MAX_WORK_CHARS`` characters;
* turning lists and dicts into text inspects at most ``MAX_INSPECTED_ITEMS`` items in all;
* loop iterations and macro calls together are at most ``MAX_ITERATIONS``;
* macros (and blocks) nest at most ``MAX_CALL_DEPTH`` deep;
* a render stops after ``MAX_RENDER_SECONDS`` (checked at each loop iteration, call, filter and output:
  a last resort against loops of expensive filters on big data).

Every failure is a ``TemplateError`` with a ``kind`` (``KINDS``: syntax, undefined, security, too_large,
too_many_iterations, too_deep, timeout, error) and, where Jinja knows it, the template line. The sandbox
refusing an attribute is "security"; a name that simply does not exist (``config``, ``request``) is
"undefined": either way nothing is reached.
The loops, ``~`` and every output are instrumented by rewriting the parsed template (For, Concat and
Output nodes) before compiling it; compiled templates are cached by source.
"""
from __future__ import annotations

import functools
import re
import string
import time
import traceback
from collections.abc import Iterable, Iterator, ItemsView, KeysView, Mapping, ValuesView
from contextvars import ContextVar
from typing import Any, Callable

from jinja2 import StrictUndefined, Template, nodes, pass_context
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError
from jinja2.runtime import BlockReference, Context, LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace
from jinja2.visitor import NodeTransformer

from projects.errors import NovelsiteError

MAX_SOURCE_CHARS = 200_000
MAX_OUTPUT_CHARS = 200_000
MAX_VALUE_CHARS = MAX_OUTPUT_CHARS
MAX_WORK_CHARS = 2_000_000
MAX_ITERATIONS = 10_000
MAX_CALL_DEPTH = 50
MAX_INT_BITS = 4096
MAX_INSPECTED_ITEMS = 1_000_000
MAX_RENDER_SECONDS = 2.0
MAX_JSON_INDENT = 16
COMPILE_CACHE_SIZE = 256

KINDS = ("syntax", "undefined", "security", "too_large", "too_many_iterations", "too_deep", "timeout", "error")

_TEMPLATE_FILENAME = "<template>"  # what Jinja names a template made from a string


class TemplateError(NovelsiteError):
    """The template cannot be rendered.

    ``kind``: one of ``KINDS``; ``detail``: the message without the line; ``lineno``: the template line,
    when known. ``message`` (and ``str()``) is ``"line N: detail"``.
    """

    code = "invalid_template"
    http_status = 400

    def __init__(self, kind: str, detail: str, *, lineno: int | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown template error kind {kind!r}")
        self.kind = kind
        self.detail = detail
        self.lineno = lineno
        message = f"line {lineno}: {detail}" if lineno else detail
        super().__init__(message, extra={"kind": kind, "lineno": lineno})


# --- Public API -----------------------------------------------------------------------------------


def render_string(source: str, context: Mapping[str, Any]) -> str:
    """Render ``source`` with ``context`` in the sandbox; raise ``TemplateError`` on any failure."""
    template = compile_template(source)
    budget = _Budget()
    token = _BUDGET.set(budget)
    stream = None
    try:
        stream = template.generate(dict(context))
        pieces: list[str] = []
        size = 0
        for piece in stream:
            size += len(piece)
            if size > MAX_OUTPUT_CHARS:
                raise TemplateError("too_large", f"the output is longer than {MAX_OUTPUT_CHARS} characters")
            pieces.append(piece)
        return "".join(pieces)
    except Exception as error:  # noqa: BLE001 - every failure of user code becomes a TemplateError
        raise _template_error(error) from None
    finally:
        if stream is not None:
            stream.close()
        _BUDGET.reset(token)


def validate_template(source: str, sample_context: Mapping[str, Any] | None = None) -> list[str]:
    """The errors of ``source`` (empty: valid): it must compile and render against ``sample_context``.

    Only the branches the sample context takes are rendered: a variable used in a branch it skips is not
    checked.
    """
    try:
        render_string(source, sample_context or {})
    except TemplateError as error:
        return [error.message]
    return []


def compile_template(source: str) -> Template:
    """The compiled, instrumented template for ``source`` (cached); ``TemplateError`` if it does not compile."""
    if not isinstance(source, str):
        raise TypeError(f"a template source must be a string, not {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise TemplateError("too_large", f"the template is longer than {MAX_SOURCE_CHARS} characters")
    try:
        return _compile(source)
    except TemplateError:
        raise
    except Exception as error:  # noqa: BLE001
        raise _template_error(error, compiling=True) from None


# --- Errors ---------------------------------------------------------------------------------------


def _template_error(error: BaseException, *, compiling: bool = False) -> TemplateError:
    lineno = _template_lineno(error)
    if isinstance(error, TemplateError):
        return TemplateError(error.kind, error.detail, lineno=error.lineno or lineno)
    if isinstance(error, TemplateSyntaxError):
        return TemplateError("syntax", f"syntax error: {error.message}", lineno=error.lineno)
    if isinstance(error, SecurityError):
        return TemplateError("security", f"refused by the sandbox: {error}", lineno=lineno)
    if isinstance(error, UndefinedError):
        return TemplateError("undefined", str(error.message), lineno=lineno)
    if isinstance(error, RecursionError):
        where = "the template is nested too deeply to compile" if compiling else "recursion is too deep"
        return TemplateError("too_deep", where, lineno=lineno)
    if isinstance(error, MemoryError):
        return TemplateError("too_large", "the template needs too much memory", lineno=lineno)
    if isinstance(error, OverflowError) and "MAX_RANGE" in str(error):
        return TemplateError("too_many_iterations", str(error), lineno=lineno)
    if compiling:
        return TemplateError("syntax", f"the template does not compile: {type(error).__name__}: {error}")
    return TemplateError("error", f"{type(error).__name__}: {error}", lineno=lineno)


def _template_lineno(error: BaseException) -> int | None:
    """The template line of the innermost template frame of the traceback (Jinja rewrites them)."""
    lineno = None
    for frame, line in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == _TEMPLATE_FILENAME:
            lineno = line
    return lineno


# --- The render budget ----------------------------------------------------------------------------


class _Budget:
    __slots__ = ("iterations", "work", "inspected", "depth", "deadline")

    def __init__(self) -> None:
        self.iterations = 0
        self.work = 0
        self.inspected = 0
        self.depth = 0
        self.deadline = time.monotonic() + MAX_RENDER_SECONDS

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateError("timeout", f"rendering took longer than {MAX_RENDER_SECONDS:g} seconds")

    def tick(self, steps: int = 1) -> None:
        self.iterations += steps
        if self.iterations > MAX_ITERATIONS:
            raise TemplateError(
                "too_many_iterations",
                f"more than {MAX_ITERATIONS} loop iterations and macro calls",
            )
        self.check_time()

    def produce(self, chars: int) -> None:
        self.work += chars
        if self.work > MAX_WORK_CHARS:
            raise TemplateError(
                "too_large",
                f"the template produces more than {MAX_WORK_CHARS} characters of text in all "
                "(counting macro bodies, set blocks and filter results)",
            )
        self.check_time()

    def inspect(self, items: int) -> None:
        self.inspected += items
        if self.inspected > MAX_INSPECTED_ITEMS:
            raise TemplateError(
                "too_large",
                f"the template turns too much data into text (more than {MAX_INSPECTED_ITEMS} items inspected)",
            )

    def counted(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.tick()
            yield item


_BUDGET: ContextVar[_Budget | None] = ContextVar("jacquard_template_budget", default=None)


def _budget() -> _Budget:
    # Outside render_string (e.g. Jinja folding a constant at compile time) a throwaway budget keeps
    # the per-value limits without counting.
    return _BUDGET.get() or _Budget()


def _too_large(what: str, size: int, limit: int = MAX_VALUE_CHARS) -> TemplateError:
    return TemplateError("too_large", f"{what} would be {size} characters, more than {limit}")


def _estimate(value: Any, limit: int) -> int:
    """About ``len(str(value))``, cheaply; stops counting once past ``limit`` (safe on huge or shared data).

    The items looked at are charged to the render budget, so that estimating the same big list again and
    again in a loop cannot take forever.
    """
    if isinstance(value, str):
        return len(value)
    total = 0
    visited = 0
    stack = [value]
    while stack:
        item = stack.pop()
        visited += 1
        if isinstance(item, str):
            total += len(item) + 4
        elif isinstance(item, (bytes, bytearray)):
            total += 4 * len(item) + 3
        elif item is None or isinstance(item, (bool, float, range)):
            total += 24
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 4
        elif isinstance(item, (Mapping, Namespace)):
            mapping = item._Namespace__attrs if isinstance(item, Namespace) else item  # type: ignore[attr-defined]
            room = (limit - total) // 4 + 1
            if len(mapping) > room:
                total += 4 * len(mapping)
            else:
                total += 2 + 4 * len(mapping)
                for key, child in mapping.items():
                    stack.append(key)
                    stack.append(child)
        elif isinstance(item, (list, tuple, set, frozenset, KeysView, ValuesView, ItemsView)):
            room = (limit - total) // 2 + 1
            if len(item) > room:
                total += 2 * len(item)
            else:
                total += 2 + 2 * len(item)
                stack.extend(item)
        else:
            total += 64
        if total > limit:
            break
    _budget().inspect(visited)
    return total


_SMALL_SCALARS = (int, float, bool, type(None))


def _check_value(what: str, value: Any, limit: int = MAX_VALUE_CHARS) -> None:
    if type(value) in _SMALL_SCALARS:
        return
    size = _estimate(value, limit)
    if size > limit:
        raise _too_large(what, size, limit)


def _as_str(value: Any, limit: int) -> str:
    if type(value) is str:
        text = value
    else:
        _check_value("a value turned into text", value, limit)
        text = str(value)
    if len(text) > limit:
        raise _too_large("a value turned into text", len(text), limit)
    return text


# --- Operators and calls --------------------------------------------------------------------------

_SEQUENCES = (str, bytes, list, tuple)
_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FORMATTER = string.Formatter()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_width(what: str, width: Any, limit: int = MAX_VALUE_CHARS) -> None:
    if _is_int(width) and width > limit:
        raise _too_large(what, width, limit)


def _check_printf(fmt: str) -> None:
    for match in _PRINTF_SPEC.finditer(fmt):
        for number in match.groups():
            if number == "*":
                raise TemplateError("too_large", "a '*' width or precision in a % format is not allowed")
            if number and (len(number) > 7 or int(number) > MAX_VALUE_CHARS):
                raise _too_large("a % format width", int(number) if len(number) <= 18 else 10 ** 18)


def _check_format_string(fmt: str) -> None:
    """A str.format string: no dynamic ({...} inside a spec) or huge widths and precisions."""
    try:
        fields = list(_FORMATTER.parse(fmt))
    except ValueError:
        return  # str.format will raise the real error
    for _literal, _field, spec, _conversion in fields:
        if not spec:
            continue
        if "{" in spec:
            raise TemplateError("too_large", "a nested {...} in a format spec is not allowed")
        for number in re.findall(r"\d+", spec):
            if len(number) > 7 or int(number) > MAX_VALUE_CHARS:
                raise _too_large("a format width", int(number) if len(number) <= 18 else 10 ** 18)


def _checked_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be too large, before computing it."""
    if operator == "*":
        if _is_int(left) and isinstance(right, _SEQUENCES):
            left, right = right, left
        if isinstance(left, _SEQUENCES) and _is_int(right):
            if right > 0:
                if isinstance(left, (str, bytes)):
                    size = len(left) * right
                else:
                    size = _estimate(left, MAX_VALUE_CHARS // right + 1) * right
                if size > MAX_VALUE_CHARS:
                    raise _too_large("a repetition (*)", size)
        elif _is_int(left) and _is_int(right) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise TemplateError("too_large", f"a product of integers larger than {MAX_INT_BITS} bits")
    elif operator == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            if right > MAX_INT_BITS or right * (abs(left).bit_length() - 1) > MAX_INT_BITS:
                raise TemplateError("too_large", f"a power larger than {MAX_INT_BITS} bits")
    elif operator == "+":
        if isinstance(left, (str, bytes)) and isinstance(right, (str, bytes)):
            size = len(left) + len(right)
            if size > MAX_VALUE_CHARS:
                raise _too_large("a concatenation (+)", size)
        elif isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
            size = _estimate(left, MAX_VALUE_CHARS) + _estimate(right, MAX_VALUE_CHARS)
            if size > MAX_VALUE_CHARS:
                raise _too_large("a concatenation (+)", size)
    elif operator == "%":
        if isinstance(left, str):
            _check_printf(left)
            _check_value("the arguments of a % format", right)


def _checked_method_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Refuse a str/bytes/int method call whose result would be too large; may return new args."""
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    if isinstance(owner, (str, bytes)):
        size = len(owner)

        def arg(position: int, keyword: str, default: Any = None) -> Any:
            return args[position] if len(args) > position else kwargs.get(keyword, default)

        if name in ("center", "ljust", "rjust", "zfill"):
            _check_width(f"{name}()", arg(0, "width"))
        elif name == "expandtabs":
            tabsize = arg(0, "tabsize", 8)
            if _is_int(tabsize):
                projected = size + owner.count("\t" if isinstance(owner, str) else b"\t") * max(tabsize, 0)
                if projected > MAX_VALUE_CHARS:
                    raise _too_large("expandtabs()", projected)
        elif name == "replace" and len(args) >= 2:
            old, new, count = args[0], args[1], arg(2, "count", -1)
            if isinstance(old, (str, bytes)) and isinstance(new, (str, bytes)):
                hits = size + 1 if not old else owner.count(old)
                if _is_int(count) and count >= 0:
                    hits = min(hits, count)
                projected = size + hits * len(new)
                if projected > MAX_VALUE_CHARS:
                    raise _too_large("replace()", projected)
        elif name == "join" and args:
            items = list(args[0])
            projected = size * max(len(items) - 1, 0) + sum(
                len(item) if isinstance(item, (str, bytes)) else MAX_VALUE_CHARS for item in items
            )
            if projected > MAX_VALUE_CHARS:
                raise _too_large("join()", projected)
            return (items, *args[1:])
        elif name == "translate" and args:
            table = args[0]
            if isinstance(table, Mapping):
                longest = max((len(v) if isinstance(v, (str, bytes)) else 1 for v in table.values()), default=1)
                if size * longest > MAX_VALUE_CHARS:
                    raise _too_large("translate()", size * longest)
    elif _is_int(owner) and name == "to_bytes":
        _check_width("to_bytes()", args[0] if args else kwargs.get("length"))
    return args


# --- Filters --------------------------------------------------------------------------------------


# The documented parameters of the checked filters, after the value (Jinja's async variants hide the
# real signature, so the arguments are bound by these lists rather than by inspect).
_FILTER_PARAMS: dict[str, tuple[tuple[str, Any], ...]] = {
    "center": (("width", 80),),
    "indent": (("width", 4), ("first", False), ("blank", False)),
    "replace": (("old", None), ("new", None), ("count", None)),
    "wordwrap": (("width", 79), ("break_long_words", True), ("wrapstring", "\n"), ("break_on_hyphens", True)),
    "batch": (("linecount", None), ("fill_with", None)),
    "slice": (("slices", None), ("fill_with", None)),
    "sum": (("attribute", None), ("start", 0)),
    "tojson": (("indent", None),),
}


def _bind(name: str, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments of filter ``name`` by parameter name (``s``/``value``: the filtered value)."""
    if name == "format":
        return {"value": value, "args": args, "kwargs": kwargs}
    bound: dict[str, Any] = {"s": value, "value": value}
    for position, (param, default) in enumerate(_FILTER_PARAMS[name]):
        bound[param] = args[position] if position < len(args) else kwargs.get(param, default)
    return bound


def _pre_center(a: dict[str, Any]) -> None:
    _check_width("center", a.get("width"))


def _pre_indent(a: dict[str, Any]) -> None:
    text, width = a.get("s"), a.get("width")
    if isinstance(text, str):
        per_line = width if _is_int(width) else len(width) if isinstance(width, str) else 0
        projected = len(text) + per_line * (text.count("\n") + 1)
        if projected > MAX_VALUE_CHARS:
            raise _too_large("indent", projected)


def _pre_replace(a: dict[str, Any]) -> None:
    text, old, new, count = a.get("s"), a.get("old"), a.get("new"), a.get("count")
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        hits = len(text) + 1 if not old else text.count(old)
        if _is_int(count) and count >= 0:
            hits = min(hits, count)
        projected = len(text) + hits * len(new)
        if projected > MAX_VALUE_CHARS:
            raise _too_large("replace", projected)


def _pre_format(a: dict[str, Any]) -> None:
    if isinstance(a.get("value"), str):
        _check_printf(a["value"])
    _check_value("the arguments of format", (a.get("args"), a.get("kwargs")))


def _pre_wordwrap(a: dict[str, Any]) -> None:
    text, width, wrap = a.get("s"), a.get("width"), a.get("wrapstring")
    if isinstance(text, str) and isinstance(wrap, str) and _is_int(width):
        projected = len(text) + (len(text) // max(width, 1) + text.count("\n") + 1) * len(wrap)
        if projected > MAX_VALUE_CHARS:
            raise _too_large("wordwrap", projected)


def _pre_batch(a: dict[str, Any]) -> None:
    linecount = a.get("linecount")
    if a.get("fill_with") is not None and _is_int(linecount) and linecount > MAX_VALUE_CHARS:
        raise TemplateError(
            "too_large", f"batch with fill_with would pad to {linecount} items, more than {MAX_VALUE_CHARS}"
        )


def _pre_slice(a: dict[str, Any]) -> None:
    slices = a.get("slices")
    if _is_int(slices) and slices > MAX_ITERATIONS:
        raise TemplateError("too_many_iterations", f"slice into more than {MAX_ITERATIONS} parts")


def _pre_sum(a: dict[str, Any]) -> None:
    start = a.get("start")
    if not (isinstance(start, (int, float)) and not isinstance(start, bool)):
        raise TemplateError("error", "sum adds numbers only: start must be a number")


def _pre_tojson(a: dict[str, Any]) -> None:
    indent = a.get("indent")
    if (_is_int(indent) and indent > MAX_JSON_INDENT) or (isinstance(indent, str) and len(indent) > MAX_JSON_INDENT):
        raise TemplateError("too_large", f"tojson indent is more than {MAX_JSON_INDENT}")


_FILTER_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "center": _pre_center,
    "indent": _pre_indent,
    "replace": _pre_replace,
    "format": _pre_format,
    "wordwrap": _pre_wordwrap,
    "batch": _pre_batch,
    "slice": _pre_slice,
    "sum": _pre_sum,
    "tojson": _pre_tojson,
}
# Filters that turn their input into text: the input's size is checked first, since str() of a list
# holding many references to one big string would be huge.
_STRINGIFYING_FILTERS = frozenset({
    "capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower", "pprint", "replace",
    "safe", "string", "striptags", "title", "tojson", "trim", "truncate", "upper", "urlencode", "urlize",
    "wordcount", "wordwrap", "xmlattr",
})


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    check = _FILTER_CHECKS.get(name)
    stringifies = name in _STRINGIFYING_FILTERS

    @functools.wraps(func)  # keeps jinja_pass_arg, so Jinja passes the same first argument
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.check_time()
        if stringifies and len(args) > skip:
            _check_value(f"the input of the {name} filter", args[skip], MAX_WORK_CHARS)
        if name == "join" and len(args) > skip:
            args = _materialise_join(args, skip, kwargs)
        if check is not None and len(args) > skip:
            check(_bind(name, args[skip], args[skip + 1:], kwargs))
        result = func(*args, **kwargs)
        if isinstance(result, str):
            budget.produce(len(result))
        return result

    return guarded


def _materialise_join(args: tuple[Any, ...], skip: int, kwargs: dict[str, Any]) -> tuple[Any, ...]:
    items = args[skip]
    if not isinstance(items, (list, tuple)):
        try:
            items = list(items)
        except TypeError:
            return args  # not iterable: the filter raises the real error
    separator = args[skip + 1] if len(args) > skip + 1 else kwargs.get("d", "")
    projected = (len(separator) if isinstance(separator, str) else 0) * max(len(items) - 1, 0)
    for item in items:
        projected += len(item) if isinstance(item, str) else _estimate(item, MAX_VALUE_CHARS)
        if projected > MAX_VALUE_CHARS:
            raise _too_large("join", projected)
    return (*args[:skip], items, *args[skip + 1:])


@pass_context
def _counted_iter(context: Context, iterable: Any) -> Iterator[Any]:
    return _budget().counted(iterable)


@pass_context
def _output(context: Context, value: Any) -> str:
    text = _as_str(value, MAX_OUTPUT_CHARS)
    _budget().produce(len(text))
    return text


@pass_context
def _concat(context: Context, values: list[Any]) -> str:
    pieces = []
    size = 0
    for value in values:
        text = _as_str(value, MAX_VALUE_CHARS)
        size += len(text)
        if size > MAX_VALUE_CHARS:
            raise _too_large("a concatenation (~)", size)
        pieces.append(text)
    _budget().produce(size)
    return "".join(pieces)


_ITER_FILTER = "_jacquard_iter"
_OUTPUT_FILTER = "_jacquard_output"
_CONCAT_FILTER = "_jacquard_concat"


# --- Environment ----------------------------------------------------------------------------------


class JacquardEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox plus the render budget (operators, calls and str.format are checked)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _checked_binop(operator, left, right)
        result = self.binop_table[operator](left, right)
        if isinstance(result, str):
            _budget().produce(len(result))
        return result

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        if not __self.is_safe_callable(__obj):
            raise SecurityError(f"{__obj!r} is not safely callable")
        budget = _budget()
        budget.check_time()
        if isinstance(__obj, (Macro, BlockReference, LoopContext)):
            if isinstance(__obj, LoopContext) and args:  # a recursive loop: loop(children)
                args = (budget.counted(args[0]), *args[1:])
            budget.tick()
            if budget.depth >= MAX_CALL_DEPTH:
                raise TemplateError("too_deep", f"macros or blocks nested more than {MAX_CALL_DEPTH} deep")
            budget.depth += 1
            try:
                result = __context.call(__obj, *args, **kwargs)
            finally:
                budget.depth -= 1
            if isinstance(result, str) and len(result) > MAX_OUTPUT_CHARS:
                raise _too_large("a macro's output", len(result), MAX_OUTPUT_CHARS)
            return result
        args = _checked_method_call(__obj, args, kwargs)
        result = __context.call(__obj, *args, **kwargs)
        if isinstance(result, (str, bytes)):
            budget.produce(len(result))
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def checked(*args: Any, **kwargs: Any) -> str:
            _check_format_string(fmt)
            _check_value("the arguments of format()", (args, kwargs))
            result = wrapped(*args, **kwargs)
            if len(result) > MAX_VALUE_CHARS:
                raise _too_large("format()", len(result))
            _budget().produce(len(result))
            return result

        return functools.update_wrapper(checked, wrapped)


class _Instrument(NodeTransformer):
    """Route loops, ``~`` and output through the budget filters."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        node = self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, _ITER_FILTER, [], [], None, None, lineno=node.iter.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        node = self.generic_visit(node)
        items = nodes.List(node.nodes, lineno=node.lineno)
        return nodes.Filter(items, _CONCAT_FILTER, [], [], None, None, lineno=node.lineno)

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        node = self.generic_visit(node)
        wrapped = []
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                child = nodes.Const(child.data, lineno=child.lineno)
            wrapped.append(nodes.Filter(child, _OUTPUT_FILTER, [], [], None, None, lineno=child.lineno))
        node.nodes = wrapped
        return node


_REFUSED_NODES = (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)


def _make_environment() -> JacquardEnvironment:
    env = JacquardEnvironment(
        autoescape=False,
        undefined=StrictUndefined,
        extensions=["jinja2.ext.loopcontrols"],
        cache_size=0,  # no loader, nothing to cache; compiled templates are cached by _compile
    )
    env.globals.pop("lipsum", None)  # lipsum(n) would generate n paragraphs: useless here, and a DoS
    # tojson keeps Chinese readable in prompts (the judge reads the checks, issue #17), not \uXXXX escapes
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "ensure_ascii": False}
    env.filters = {name: _guard_filter(name, func) for name, func in env.filters.items()}
    env.filters[_ITER_FILTER] = _counted_iter
    env.filters[_OUTPUT_FILTER] = _output
    env.filters[_CONCAT_FILTER] = _concat
    return env


_ENV = _make_environment()


@functools.lru_cache(maxsize=COMPILE_CACHE_SIZE)
def _compile(source: str) -> Template:
    ast = _ENV.parse(source)
    for node in ast.find_all(_REFUSED_NODES):
        keyword = {nodes.Include: "include", nodes.Import: "import", nodes.FromImport: "from … import",
                   nodes.Extends: "extends"}[type(node)]
        raise TemplateError(
            "security", f"{{% {keyword} %}} is not available: a prompt template stands alone", lineno=node.lineno
        )
    ast = _Instrument().visit(ast)
    ast.set_environment(_ENV)
    return _ENV.from_string(ast)
