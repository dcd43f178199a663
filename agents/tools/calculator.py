"""Calculator tool: arithmetic evaluated safely, without eval/exec.

The expression is parsed with `ast` and walked over an allow-list of node types: number
literals, + - * / // % **, unary + and -, parentheses, calls to a fixed set of math functions,
and the constants pi and e. Everything else (names, attributes, strings, subscripts, lambdas,
comparisons, keyword arguments...) is refused before anything is evaluated.

Guards: the expression is at most 500 characters; an integer power whose result would exceed
1024 bits is refused before it is computed; every intermediate result must be a finite real
number below 2**1024 (about 1.8e308, the float range); division or modulo by zero is a clear error.

Input conveniences, applied before parsing and shown back in the answer:
  - `^` means power (as on calculators and phones), not XOR: `2^10` is 1024.
  - `×` `·` and an `x` between two numbers mean `*`; `÷` means `/`; `−` means `-`; `π` is pi.
  - A comma between digit groups of three is a thousands separator: `1,234,567.5`. Function
    arguments are separated by a comma then a space: `max(1, 234)` (`max(1,234)` is 1234).
  - `%` is modulo (Python), not percent.
"""

from __future__ import annotations

import ast
import decimal
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from bot.tools.registry import READS, tool

MAX_LENGTH = 500
MAX_BITS = 1024  # integers below 2**1024 (~1.8e308), the same range as floats

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg}


def _round(value: int | float, digits: int | None = None) -> int | float:
    """Like round(), but halves go away from zero as people expect: round(2.5) is 3."""
    if digits is not None and not (isinstance(digits, int) and -400 <= digits <= 400):
        raise ValueError("round()'s second argument (digits) must be a whole number")
    with decimal.localcontext() as context:
        context.prec = 1000
        exact = decimal.Decimal(repr(value) if isinstance(value, float) else value)
        rounded = exact.quantize(decimal.Decimal(1).scaleb(-(digits or 0)),
                                 rounding=decimal.ROUND_HALF_UP)
    return float(rounded) if isinstance(value, float) and digits is not None else int(rounded)


# name -> (function, min args, max args or None for any number)
_FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "sqrt": (math.sqrt, 1, 1), "abs": (abs, 1, 1), "round": (_round, 1, 2),
    "min": (lambda *a: min(a), 1, None), "max": (lambda *a: max(a), 1, None),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1), "log": (math.log, 1, 2), "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1), "tan": (math.tan, 1, 1),
}
_CONSTANTS = {"pi": math.pi, "e": math.e}

_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")
_TIMES_X = re.compile(r"(\d[\d.]*|\))\s*[xX]\s*(?=[\d.(])")
_SYMBOLS = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-", "π": "pi"})


def normalize(expression: str) -> str:
    text = expression.strip().translate(_SYMBOLS).replace("^", "**")
    text = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text)
    # "2x3" is 2 * 3, but "0x1F" stays a hexadecimal literal.
    return _TIMES_X.sub(lambda m: m.group() if m.group() in ("0x", "0X") else
                        f"{m.group(1)} * ", text)


def _check(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise ValueError("the result is too large (limit about 1.8e308)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("the result is too large or undefined")
    return value


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if (abs(base).bit_length() - 1) * exponent > MAX_BITS:
            raise ValueError(f"the power {base}**{exponent} is too large (limit about 1.8e308)")
    return base**exponent


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ValueError(f"only numbers are allowed, not {node.value!r}")
        return _check(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _check(_power(left, right))
        return _check(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise ValueError(f"unknown name {node.id!r}; known constants: pi, e")
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in _FUNCTIONS:
            raise ValueError(f"unknown function {name or ast.unparse(node.func)!r}; "
                             f"available: {', '.join(_FUNCTIONS)}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise ValueError(f"{name}() takes plain positional arguments only")
        fn, least, most = _FUNCTIONS[name]
        if len(node.args) < least or (most is not None and len(node.args) > most):
            count = str(least) if least == most else f"{least} or more" if most is None \
                else f"{least} to {most}"
            raise ValueError(f"{name}() takes {count} argument(s), got {len(node.args)}")
        args = [_evaluate(a) for a in node.args]
        return _check(fn(*args))
    raise ValueError(f"not allowed in a calculation: {type(node).__name__.lower()} "
                     f"({ast.unparse(node)[:40]!r})")


def format_number(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return format(value, ".15g")
    return f"{value} (about {decimal.Decimal(value):.6e})" if abs(value) >= 10**16 else str(value)


def evaluate(expression: str) -> tuple[str, int | float]:
    """(the expression as understood, its value); ValueError explains any refusal."""
    if len(expression) > MAX_LENGTH:
        raise ValueError(f"expression too long ({len(expression)} characters; limit "
                         f"{MAX_LENGTH})")
    text = normalize(expression)
    if not text:
        raise ValueError("empty expression")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"cannot parse {expression!r} as arithmetic ({err.msg})") from None
    try:
        value = _evaluate(tree)
    except ZeroDivisionError:
        raise ValueError(f"division by zero in {expression!r}") from None
    except OverflowError:
        raise ValueError("the result is too large (limit about 1.8e308)") from None
    except (ArithmeticError, TypeError, ValueError) as err:
        if isinstance(err, ValueError) and str(err) != "math domain error":
            raise
        raise ValueError(f"cannot compute {expression!r}: {err}") from None
    except (RecursionError, MemoryError):
        raise ValueError("expression too deeply nested or too large") from None
    return ast.unparse(tree), value


@tool(safe_to_repeat=True, does=READS)
async def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression safely and exactly; use it for any non-trivial math.

    Supports + - * / // % (modulo, not percent) and ** or ^ (power), parentheses, the
    constants pi and e, and sqrt, abs, round(x[, digits]) (halves away from zero), min, max,
    floor, ceil, log(x[, base]) (natural by default), sin, cos, tan (radians). "1,234.5" means
    1234.5, so separate function arguments with ", ". No variables or units.

    Args:
        expression: The arithmetic expression, e.g. "(1,250 * 1.2) / 3" or "sqrt(2)^2".
    """
    understood, value = evaluate(expression)
    return f"{understood} = {format_number(value)}"
