"""explain(): the kernels a flush would launch for some pending results, as text, DOT or SVG.

All three show the same facts: the kernels in launch order, the ops each one computes, the
bytes it reads and writes, where each input comes from (memory, numbered ``m0, m1, ...``, or an
earlier kernel's output) and which memory inputs each output depends on. The SVG is laid out
here in pure Python (no Graphviz needed): one box per kernel, op nodes in columns by depth,
solid edges for values fused in registers, dashed edges for values read from memory.
"""
from ._types import DEPTH_DTYPE, DEPTH_NAME
from .ir import resolved


def _type(v):
    return f"{DEPTH_NAME[v.depth]}C{v.cn}"


def _nbytes(v):
    return v.rows * v.cols * v.cn * DEPTH_DTYPE[v.depth].itemsize


def _kernel_facts(k, produced=None):
    """(values read from memory, bytes read, bytes written) of one planned kernel."""
    member = {id(n) for n in k.nodes}
    reads, seen = [], set()
    for n in k.nodes:
        for i in n.inputs:
            i = resolved(i)
            if id(i) in member or id(i) in seen:
                continue
            seen.add(id(i))
            reads.append(i)
    written = sum(_nbytes(n) for n in k.outputs)
    read = sum(_nbytes(i) for i in reads)
    return reads, read, written


class _Facts:
    """Numbering of memory inputs and, per output, the memory inputs it depends on."""

    def __init__(self, kernels):
        self.sources = {}          # id(source) -> index, in order of first use
        self.source_list = []
        self._deps = {}
        for k in kernels:
            for n in k.nodes:
                for i in n.inputs:
                    i = resolved(i)
                    if i.is_source and id(i) not in self.sources:
                        self.sources[id(i)] = len(self.source_list)
                        self.source_list.append(i)

    def src_name(self, v):
        return f"m{self.sources[id(v)]}"

    def deps(self, v):
        """Sorted indices of the memory inputs ``v`` depends on."""
        v = resolved(v)
        if v.is_source:
            return (self.sources[id(v)],) if id(v) in self.sources else ()
        got = self._deps.get(id(v))
        if got is not None:
            return got
        # iterative post-order: chains may be thousands of ops deep
        stack = [(v, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in self._deps:
                continue
            ins = [resolved(i) for i in n.inputs]
            if not expanded:
                stack.append((n, True))
                stack.extend((i, False) for i in ins if not i.is_source and id(i) not in self._deps)
                continue
            s = set()
            for i in ins:
                if i.is_source:
                    if id(i) in self.sources:
                        s.add(self.sources[id(i)])
                else:
                    s.update(self._deps[id(i)])
            self._deps[id(n)] = tuple(sorted(s))
        return self._deps[id(v)]

    def deps_text(self, v):
        d = self.deps(v)
        return ", ".join(f"m{i}" for i in d) if d else "no memory input"


def explain_plan(kernels, names=None):
    names = names or {}
    facts = _Facts(kernels)
    lines = [f"lazycv plan: {len(kernels)} kernel(s)"]
    produced = {}
    for ki, k in enumerate(kernels):
        reads, rb, wb = _kernel_facts(k)
        ops = " -> ".join(n.op.label(n) for n in k.nodes)
        lines.append(f"kernel {ki}: grid {k.cols}x{k.rows}, {len(k.nodes)} op(s), "
                     f"reads {rb} B, writes {wb} B")
        lines.append(f"  ops: {ops}")
        for i in reads:
            if id(i) in produced:
                src = f"kernel {produced[id(i)]} output"
            elif i.is_source:
                src = f"memory {facts.src_name(i)}"
            else:
                src = "pending"
            lines.append(f"  in : {i.cols}x{i.rows} {_type(i)} ({src})")
        for n in k.outputs:
            produced[id(n)] = ki
            label = names.get(id(n), "temporary")
            lines.append(f"  out: {n.cols}x{n.rows} {_type(n)} = {n.op.label(n)} [{label}] "
                         f"<- {facts.deps_text(n)}")
    return "\n".join(lines)


def _dot_escape(s):
    return str(s).replace("\\", "\\\\").replace('"', '\\"')


def explain_dot(kernels, names=None):
    """Graphviz DOT: one cluster per kernel, edges from inputs to ops (dashed: read from memory)."""
    names = names or {}
    facts = _Facts(kernels)
    out = ["digraph lazycv {", "  rankdir=LR;", '  node [shape=box, fontsize=10];']
    ids = {}
    for si, v in enumerate(facts.source_list):
        ids[id(v)] = f"src{si}"
        out.append(f'  src{si} [label="m{si}: memory\\n{v.cols}x{v.rows} {_type(v)}", shape=ellipse];')
    for k in kernels:
        for n in k.nodes:
            ids.setdefault(id(n), f"n{len(ids)}")
    for ki, k in enumerate(kernels):
        _, rb, wb = _kernel_facts(k)
        out.append(f"  subgraph cluster_{ki} {{")
        out.append(f'    label="kernel {ki}: {k.cols}x{k.rows}, reads {rb} B, writes {wb} B";')
        for n in k.nodes:
            shape = ""
            label = f"{_dot_escape(n.op.label(n))}\\n{n.cols}x{n.rows} {_type(n)}"
            if any(n is o for o in k.outputs):
                shape = ", peripheries=2"
                label += f"\\n{_dot_escape(names.get(id(n), 'temporary'))} <- {facts.deps_text(n)}"
            out.append(f'    {ids[id(n)]} [label="{label}"{shape}];')
        out.append("  }")
    for k in kernels:
        member = {id(n) for n in k.nodes}
        for n in k.nodes:
            for i in n.inputs:
                i = resolved(i)
                style = "" if id(i) in member else " [style=dashed]"
                out.append(f"  {ids.get(id(i), 'pending')} -> {ids[id(n)]}{style};")
    out.append("}")
    return "\n".join(out)


# ---------------------------------------------------------------- SVG

_CW, _LH, _PAD = 6.6, 14, 6          # monospace character width, line height, box padding
_GAP_X, _GAP_Y, _HEAD = 44, 12, 26   # between columns, between boxes, kernel header height
_MARGIN, _SRC_W = 16, 190


def _esc(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _box_size(lines):
    w = max(len(s) for s in lines) * _CW + 2 * _PAD
    return round(w, 1), len(lines) * _LH + 2 * _PAD - 2


def _text(x, y, lines, anchor="start", weight=None):
    out = []
    for j, s in enumerate(lines):
        fw = f' font-weight="{weight}"' if weight and j == 0 else ""
        out.append(f'<text x="{x:.1f}" y="{y + _PAD + 10 + j * _LH:.1f}" text-anchor="{anchor}"{fw}>{_esc(s)}</text>')
    return out


def _local_depth(k):
    """Column of each node inside kernel ``k``: 0 when all its inputs come from outside."""
    member = {id(n): n for n in k.nodes}
    depth = {}
    for n0 in k.nodes:
        stack = [(n0, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in depth:
                continue
            ins = [resolved(i) for i in n.inputs]
            inside = [i for i in ins if id(i) in member]
            if not expanded:
                stack.append((n, True))
                stack.extend((i, False) for i in inside if id(i) not in depth)
                continue
            depth[id(n)] = 1 + max((depth[id(i)] for i in inside), default=-1)
    return depth


def explain_svg(kernels, names=None):
    """A standalone SVG picture of the plan (see the module docstring)."""
    names = names or {}
    facts = _Facts(kernels)
    body, edges = [], []
    boxes = {}                 # (kernel index, id(node)) -> (x, y, w, h)
    out_box = {}               # id(node) -> box of the kernel that writes it
    x0 = _MARGIN + _SRC_W + _GAP_X
    y = _MARGIN + 22
    right = x0
    for ki, k in enumerate(kernels):
        _, rb, wb = _kernel_facts(k)
        depth = _local_depth(k)
        cols = {}
        for n in k.nodes:                       # planner order, so the picture is stable
            cols.setdefault(depth[id(n)], []).append(n)
        outs = {id(n) for n in k.outputs}
        sizes = {}
        for n in k.nodes:
            lines = [n.op.label(n), f"{n.cols}x{n.rows} {_type(n)}"]
            if id(n) in outs:
                lines += [f"-> {names.get(id(n), 'temporary')}", f"<- {facts.deps_text(n)}"]
            sizes[id(n)] = (lines, _box_size(lines))
        header = f"kernel {ki}: grid {k.cols}x{k.rows}, {len(k.nodes)} op(s), reads {rb} B, writes {wb} B"
        cx = x0 + _PAD * 2
        col_h = 0
        placed = []
        for c in sorted(cols):
            cw = max(sizes[id(n)][1][0] for n in cols[c])
            cy = y + _HEAD
            for n in cols[c]:
                lines, (w, h) = sizes[id(n)]
                boxes[(ki, id(n))] = (cx, cy, w, h)
                placed.append((n, lines, cx, cy, w, h))
                cy += h + _GAP_Y
            col_h = max(col_h, cy - (y + _HEAD))
            cx += cw + _GAP_X
        kw = max(cx - _GAP_X + _PAD * 2 - x0, len(header) * _CW + 2 * _PAD)
        kh = _HEAD + col_h + _PAD
        right = max(right, x0 + kw)
        body.append(f'<g class="kernel" id="kernel{ki}">')
        body.append(f'<rect x="{x0:.1f}" y="{y:.1f}" width="{kw:.1f}" height="{kh:.1f}" rx="6" '
                    'fill="#eef4fb" stroke="#4a78a8" stroke-width="1.2"/>')
        body += _text(x0 + _PAD, y - 4, [header], weight="bold")
        for n, lines, bx, by, w, h in placed:
            is_out = id(n) in outs
            stroke = ' stroke-width="2.2"' if is_out else ""
            fill = "#ffffff" if not is_out else "#fff7e0"
            body.append(f'<rect class="op" x="{bx:.1f}" y="{by:.1f}" width="{w:.1f}" height="{h:.1f}" '
                        f'rx="3" fill="{fill}" stroke="#333333"{stroke}/>')
            body += _text(bx + _PAD, by, lines, weight="bold")
            if is_out:
                out_box.setdefault(id(n), (bx, by, w, h))
        body.append("</g>")
        y += kh + _GAP_Y * 3

    # memory inputs, each beside its first consumer
    src_pos = {}
    sy_next = _MARGIN + 22
    first_use = {}
    for ki, k in enumerate(kernels):
        for n in k.nodes:
            for i in n.inputs:
                i = resolved(i)
                if i.is_source and id(i) not in first_use:
                    first_use[id(i)] = boxes[(ki, id(n))]
    for si, v in enumerate(facts.source_list):
        lines = [f"m{si}: memory", f"{v.cols}x{v.rows} {_type(v)}"]
        w, h = _box_size(lines)
        w = min(max(w, 120), _SRC_W)
        want = first_use[id(v)][1]
        sy = max(want, sy_next)
        src_pos[id(v)] = (_MARGIN, sy, w, h)
        body.append(f'<ellipse class="memory" cx="{_MARGIN + w / 2:.1f}" cy="{sy + h / 2:.1f}" rx="{w / 2:.1f}" '
                    f'ry="{h / 2 + 3:.1f}" fill="#e8f5e9" stroke="#2e7d32"/>')
        body += _text(_MARGIN + w / 2, sy, lines, anchor="middle")
        sy_next = sy + h + _GAP_Y * 2

    # edges: solid inside a kernel (registers), dashed through memory
    for ki, k in enumerate(kernels):
        member = {id(n) for n in k.nodes}
        for n in k.nodes:
            tx, ty, _, th = boxes[(ki, id(n))]
            for i in n.inputs:
                i = resolved(i)
                if id(i) in member:
                    sx, sy, sw, sh = boxes[(ki, id(i))]
                    dash = ""
                elif i.is_source:
                    sx, sy, sw, sh = src_pos[id(i)]
                    dash = ' stroke-dasharray="5,3"'
                elif id(i) in out_box:
                    sx, sy, sw, sh = out_box[id(i)]
                    dash = ' stroke-dasharray="5,3"'
                else:
                    continue
                ax, ay = sx + sw, sy + sh / 2
                bx, by = tx, ty + th / 2
                if bx <= ax:              # an earlier kernel's output further right: go around
                    mid = (ax + bx) / 2
                    path = f"M{ax:.1f},{ay:.1f} C{ax + 40:.1f},{ay:.1f} {bx - 40:.1f},{by:.1f} {bx:.1f},{by:.1f}"
                else:
                    mid = (ax + bx) / 2
                    path = f"M{ax:.1f},{ay:.1f} C{mid:.1f},{ay:.1f} {mid:.1f},{by:.1f} {bx:.1f},{by:.1f}"
                edges.append(f'<path class="edge" d="{path}" fill="none" stroke="#555555" stroke-width="1.1"'
                             f'{dash} marker-end="url(#arrow)"/>')

    width = right + _MARGIN
    height = max(y, sy_next) + _MARGIN + 18
    title = f"lazycv plan: {len(kernels)} kernel(s)"
    legend = "solid edge: fused in registers; dashed edge: read from memory; bold box: written output"
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="11">',
        f"<title>{_esc(title)}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555555"/></marker></defs>',
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
    ]
    head += _text(_MARGIN, 0, [title], weight="bold")
    foot = _text(_MARGIN, height - 18 - _MARGIN + 4, [legend])
    return "\n".join(head + body + edges + foot + ["</svg>"]) + "\n"
