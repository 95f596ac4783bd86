"""`params`: integer expressions, `{expr}` placeholders and `for` loops in a stream (docs/format.md, "params").

A params stream is a template. `errors(doc)` checks every expression, name and
loop (JSON paths of the template); `instantiate(doc, values)` returns the
plain document for one combination of values, which the loader then checks
like any other stream.
"""

from __future__ import annotations

import ast
import itertools
import re
from functools import cache
from typing import Any

from .errors import InputError, VkverifyError, json_path
from .schema import schema

__all__ = ["ExprError", "combinations", "errors", "evaluate", "instantiate", "integer_keys", "loops", "names", "parse"]

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
LOOP = re.compile(r"^\s*([A-Za-z_]\w*)\s+in\s+(.+?)\s*$")
KEY_LOOP = re.compile(r"^for (.+?): (.+)$")
MAX_EXPRESSION_DEPTH = 32  # operators nested in one expression; the evaluator recurses once per level
MAX_INSTANCES = 256  # combinations of parameter values: each is loaded and checked
MAX_UNROLLED = 10_000  # items the `for` loops of all instances make together, counted before they are made
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


class ExprError(VkverifyError, ValueError):
    """An expression that does not parse, names an unknown parameter or divides by zero. The loader
    turns it into a StreamError naming the JSON path; seen as itself only by callers of params' functions."""


@cache
def integer_keys() -> frozenset[str]:
    """Field names the schema types as integers (or lists of them): where an expression string goes."""
    found = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                types = sub.get("type") if isinstance(sub, dict) else None
                item_type = sub.get("items", {}).get("type") if isinstance(sub, dict) else None
                if "integer" in (types if isinstance(types, list) else [types]) or item_type == "integer":
                    found.add(key)
            for sub in node.values():
                walk(sub)
        elif isinstance(node, list):
            for sub in node:
                walk(sub)
    walk(schema())
    return frozenset(found)


@cache
def parse(text: str) -> ast.expr:
    """Integers, + - * // %, unary minus, parentheses and names."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        raise ExprError(f"expression {_short(text)} does not parse") from None
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.USub, *_OPS)) or \
            isinstance(node, ast.Constant) and type(node.value) is int
        if not ok:
            raise ExprError(f"expression {_short(text)}: only integers, names, + - * // % and parentheses")
    if _depth(tree) > MAX_EXPRESSION_DEPTH:
        raise ExprError(f"expression {_short(text)} nests more than {MAX_EXPRESSION_DEPTH} operators")
    return tree


def _depth(tree: ast.expr) -> int:
    """How deep operators nest, counted without recursing (a long `1+1+...` nests deep)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack += [(child, d + 1) for child in ast.iter_child_nodes(node) if isinstance(child, (ast.BinOp, ast.UnaryOp))]
    return deepest


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def evaluate(text: str, env: dict[str, int]) -> int:
    def ev(node: ast.expr) -> int:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise ExprError(f"unknown name {node.id!r} in {_short(text)}")
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            return -ev(node.operand)
        right = ev(node.right)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            raise ExprError(f"division by zero in {_short(text)}")
        return _OPS[type(node.op)](ev(node.left), right)
    return ev(parse(text))


def names(text: str) -> set[str]:
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name)}


def loops(spec: str) -> list[tuple[str, str]]:
    """`d in n, s in 2*(n-1)` -> [(d, n), (s, 2*(n-1))], outermost first."""
    out = []
    for part in spec.split(","):
        m = LOOP.match(part)
        if m is None:
            raise ExprError(f"loop {_short(spec)}: expected `VAR in COUNT[, VAR in COUNT]`")
        parse(m.group(2))
        out.append((m.group(1), m.group(2)))
    return out


def combinations(ranges: dict[str, tuple[int, int]]) -> list[tuple[tuple[str, int], ...]]:
    """Every combination of values, smallest first (by sum, then by value); ExprError past MAX_INSTANCES,
    counted before any is made."""
    keys = sorted(ranges)
    count = 1
    for low, high in ranges.values():
        count *= max(high - low + 1, 0)
    if count > MAX_INSTANCES:
        raise ExprError(f"the parameters' ranges make {count} combinations; at most {MAX_INSTANCES} are checked")
    combos = itertools.product(*(range(ranges[k][0], ranges[k][1] + 1) for k in keys))
    return [tuple(zip(keys, c)) for c in sorted(combos, key=lambda c: (sum(c), c))]


# ---- checking the template ---------------------------------------------------------


def errors(doc: dict) -> list[InputError]:
    """Every expression, placeholder and loop that does not parse or names an unknown name."""
    found: list[InputError] = []

    def check(text: str, scope: set[str], path: tuple) -> None:
        try:
            unknown = names(text) - scope
        except ExprError as e:
            found.append(InputError(json_path(path), str(e)))
            return
        if unknown:
            found.append(InputError(json_path(path), f"unknown name {min(unknown)!r} in {text!r} "
                                                      f"(parameters and loop variables: {sorted(scope)})"))

    def loop_scope(spec: str, scope: set[str], path: tuple) -> set[str] | None:
        try:
            parts = loops(spec)
        except ExprError as e:
            found.append(InputError(json_path(path), str(e)))
            return None
        inner = set(scope)
        for var, count in parts:
            check(count, inner, path)
            inner.add(var)
        return inner

    def walk(node: Any, scope: set[str], path: tuple, key: str | None) -> None:
        if isinstance(node, dict):
            if set(node) == {"for", "do"}:
                if not isinstance(node["for"], str) or not isinstance(node["do"], list):
                    found.append(InputError(json_path(path), "a loop is {\"for\": \"VAR in COUNT\", \"do\": [...]}"))
                    return
                inner = loop_scope(node["for"], scope, path + ("for",))
                if inner is not None:
                    walk(node["do"], inner, path + ("do",), None)
                return
            for k, v in node.items():
                m = KEY_LOOP.match(k)
                inner = scope
                if m is not None:
                    inner = loop_scope(m.group(1), scope, path + (k,))
                    if inner is None:
                        continue
                    for text in PLACEHOLDER.findall(m.group(2)):
                        check(text, inner, path + (k,))
                walk(v, inner, path + (k,), k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, scope, path + (i,), key)
        elif isinstance(node, str) and key not in ("description", "label", "name", "base64", "reason"):
            if key in integer_keys():
                check(node, scope, path)
            else:
                for text in PLACEHOLDER.findall(node):
                    check(text, scope, path)

    params = set(doc.get("params", {}))
    for k, v in doc.items():
        if k not in ("params", "expect", "format"):
            walk(v, params, (k,), k)
    return found


# ---- instantiating ----------------------------------------------------------------


def instantiate(doc: dict, values: dict[str, int], made: list[int] | None = None) -> dict:
    """The plain stream for one combination of values (no `params`, loops unrolled); ExprError when the
    loops would make more than MAX_UNROLLED items, counting on from `made[0]` (the instances before)."""
    made = [0] if made is None else made

    def unroll(spec: str, env: dict[str, int]) -> list[dict[str, int]]:
        envs = [env]
        for var, count in loops(spec):
            counts = [evaluate(count, e) for e in envs]
            made[0] += sum(max(c, 0) for c in counts)
            if made[0] > MAX_UNROLLED:
                raise ExprError(f"loop {_short(spec)}: the loops of the parameters' combinations make more than "
                                f"{MAX_UNROLLED} items")
            envs = [{**e, var: i} for e, c in zip(envs, counts) for i in range(c)]
        return envs

    def fill(text: str, env: dict[str, int]) -> str:
        return PLACEHOLDER.sub(lambda m: str(evaluate(m.group(1), env)), text)

    def fill_label(text: str, env: dict[str, int]) -> str:
        """A label is free text: its `{expr}` placeholders that evaluate are filled, any other brace kept."""
        def one(m: re.Match) -> str:
            try:
                return str(evaluate(m.group(1), env))
            except ExprError:
                return m.group(0)
        return PLACEHOLDER.sub(one, text)

    def expand(node: Any, env: dict[str, int], key: str | None) -> Any:
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                m = KEY_LOOP.match(k)
                if m is None:
                    out[k] = expand(v, env, k)
                    continue
                for inner in unroll(m.group(1), env):
                    out[fill(m.group(2), inner)] = expand(v, inner, k)
            return out
        if isinstance(node, list):
            out = []
            for item in node:
                if isinstance(item, dict) and set(item) == {"for", "do"}:
                    for inner in unroll(item["for"], env):
                        out += expand(item["do"], inner, key)
                else:
                    out.append(expand(item, env, key))
            return out
        if isinstance(node, str) and key == "label":
            return fill_label(node, env)
        if isinstance(node, str) and key not in ("description", "name", "base64", "reason"):
            return evaluate(node, env) if key in integer_keys() else fill(node, env)
        return node

    doc = {k: v for k, v in doc.items() if k not in ("params", "expect")}
    return {k: (v if k == "format" else expand(v, values, k)) for k, v in doc.items()}

