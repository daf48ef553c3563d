"""explain(): the kernels a flush would launch for some pending results, as text, DOT or SVG.

All three show the same facts: the kernels in launch order, the ops each one computes in the
order they run, named as the cv2.cuda call that recorded them with its parameters
(``multiply(scalar 0.5)``, ``cvtColor(BGR2RGB)``: :func:`describe`), the bytes it reads and writes, where each input comes from (memory, numbered ``m0, m1, ...``, or an
earlier kernel's output) and which memory inputs each output depends on. The SVG is laid out
here in pure Python (no Graphviz needed): one box per kernel, op nodes in columns by depth,
solid edges for values fused in registers, dashed edges for values read from memory.
"""
import cv2

from ._types import DEPTH_DTYPE, DEPTH_NAME
from .ir import resolved


def _type(v):
    return f"{DEPTH_NAME[v.depth]}C{v.cn}"


def _nbytes(v):
    return v.rows * v.cols * v.cn * DEPTH_DTYPE[v.depth].itemsize


# ---------------------------------------------------------------- describing an op

def _num(v):
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _scalar(values, cn):
    vals = [_num(v) for v in values[:cn]]
    return vals[0] if len(set(vals)) == 1 else "(" + ", ".join(vals) + ")"


def _constants(prefix):
    """OpenCV's constants of one family by value (INTER_LINEAR, BORDER_REFLECT_101, ...)."""
    out = {}
    for name in dir(cv2):
        if name.startswith(prefix) and isinstance(getattr(cv2, name), int):
            out.setdefault(getattr(cv2, name), name)
    return out


_INTER = _constants("INTER_")
_BORDER = {**_constants("BORDER_"), cv2.BORDER_REFLECT_101: "BORDER_REFLECT_101"}
_ARITH = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "absdiff": "absdiff",
          "min": "min", "max": "max"}
_COLOR = {"cvt_hsv": "HSV/HLS", "cvt_hsv2bgr": "HSV/HLS to BGR", "cvt_lab": "Lab/Luv",
          "cvt_lab2bgr": "Lab/Luv to BGR", "cvt_xyz": "XYZ", "cvt_ycc": "YCrCb/YUV",
          "cvt_ycc2bgr": "YCrCb/YUV to BGR", "bayer": "Bayer demosaicing"}
_REORDER = {((2, 1, 0), 3): "BGR2RGB", ((2, 1, 0), 4): "BGRA2RGB", ((0, 1, 2), 4): "BGRA2BGR",
            ((2, 1, 0, 3), 4): "BGRA2RGBA"}


def _arith(n):
    kind, mode, _, scaled = n.static
    name = _ARITH.get(kind, kind)
    cn = n.cn
    if mode == "mm":
        args = "image, image"
    elif mode in ("mv", "vm"):
        args = "image, device scalar" if mode == "mv" else "device scalar, image"
    elif mode == "sm":
        args = f"scalar {_scalar(n.dyn[1:], cn)}, image"
    else:
        args = f"scalar {_scalar(n.dyn[1:], cn)}"
    if scaled:
        args += f", scale={_num(n.dyn[0])}"
    return f"{name}({args})"


def _threshold(n):
    from .ops.logic import _THRESH_CHOICES
    names = _constants("THRESH_")
    kind = next((names.get(t) for t, choice in _THRESH_CHOICES.items() if tuple(choice) == tuple(n.dyn[2:4])),
                "THRESH_?")
    return f"threshold({_num(n.dyn[0])}, {_num(n.dyn[1])}, {kind})"


def _yuv420(n):
    planar, u_first, bidx, out_cn = n.static
    layout = ("I420" if u_first else "YV12") if planar else ("NV12" if u_first else "NV21")
    return f"cvtColor(YUV2{'RGB' if bidx == 2 else 'BGR'}{'A' if out_cn == 4 else ''}_{layout})"


_DESCRIBE = {
    "arith": _arith,
    "convert": lambda n: (f"convertTo({_type(n)}, alpha={_num(n.dyn[0])}, beta={_num(n.dyn[1])})"
                          if n.static[0] else f"convertTo({_type(n)})"),
    "resize": lambda n: f"resize({n.cols}x{n.rows}, {_INTER.get(n.static[0], n.static[0])})",
    "resize_area": lambda n: f"resize({n.cols}x{n.rows}, INTER_AREA)",
    "resize_half": lambda n: f"resize({n.cols}x{n.rows}, exactly half: 2x2 means)",
    "reorder": lambda n: "cvtColor(" + _REORDER.get((tuple(n.static[0]), resolved(n.inputs[0]).cn),
                                                     f"channel order {tuple(n.static[0])}") + ")",
    "gray": lambda n: f"cvtColor({'RGB' if n.static[0] == 2 else 'BGR'}2GRAY)",
    "yuv420": _yuv420,
    "threshold": _threshold,
    "channel": lambda n: f"split(plane {n.static[0]})",
    "merge": lambda n: f"merge({len(n.inputs)} images)",
    "crop": lambda n: (f"GpuMat ROI ({n.dyn[1]}, {n.dyn[0]}, {n.cols}, {n.rows})" if any(n.dyn)
                       else "copy"),
    "fill": lambda n: f"setTo({_scalar(n.dyn, n.cn)})",
    "select": lambda n: "copyTo(mask)",
    "flip": lambda n: f"flip({0 if not n.static[1] else (1 if not n.static[0] else -1)})",
    "transpose": lambda n: "transpose",
    "make_border": lambda n: f"copyMakeBorder({_BORDER.get(n.static[0], n.static[0])})",
    "pyr_down": lambda n: "pyrDown",
    "pyr_up": lambda n: "pyrUp",
    "warp": lambda n: (f"{'remap' if n.static[0] == 'remap' else 'warp' + n.static[0].capitalize()}"
                       f"({_INTER.get(n.static[1], n.static[1])}, {_BORDER.get(n.static[2], n.static[2])})"),
    "warp_map": lambda n: f"{n.static[0]} warp coordinates",
    "bitwise": lambda n: ("bitwise_not" if n.static[0] == "not" else
                          f"bitwise_{('and', 'or', 'xor')[int(n.dyn[-1])]}"
                          f"({'image, image' if n.static[0] == 'mm' else 'scalar'})"),
    "add_weighted": lambda n: "addWeighted",
    "alpha_comp": lambda n: "alphaComp",
    "blend_linear": lambda n: "blendLinear",
    "lut": lambda n: "LookUpTable.transform",
    "table_lookup": lambda n: "equalizeHist (lookup)",
    "in_range": lambda n: "inRange",
    "polar": lambda n: f"cartToPolar/polarToCart({n.static[0]})",
    "mathfn": lambda n: f"{n.static[0]}",
}


def describe(n):
    """What an op is in the user's words: the cv2.cuda call that recorded it and its
    parameters. An op class may define ``describe(node)``; otherwise a table here, else the op's
    own label (user ops: their name; filters: kind, size and border)."""
    own = getattr(n.op, "describe", None)
    if own is not None:
        return own(n)
    fn = _DESCRIBE.get(n.op.name)
    if fn is not None:
        try:
            return fn(n)
        except (IndexError, KeyError, TypeError, ValueError, AttributeError):
            pass                     # an op whose parameters changed shape: its plain label
    if n.op.name in _COLOR:
        return f"cvtColor({_COLOR[n.op.name]})"
    return n.op.label(n)


def execution_order(kernels):
    """Kernels in launch order (phase by phase) and each one's ops in the order they run."""
    order = sorted(range(len(kernels)), key=lambda i: (kernels[i].level, i))
    return [kernels[i] for i in order]


def _ops_in_order(k):
    return sorted(k.nodes, key=lambda n: n.seq)


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


def explain_plan(kernels, names=None, launches=None):
    names = names or {}
    kernels = execution_order(kernels)
    facts = _Facts(kernels)
    lines = [f"lazycv plan: {len(kernels)} kernel(s)"]
    if launches is not None and launches != len(kernels):
        lines[0] += f", run as {launches} launch(es) after horizontal batching"
    produced = {}
    for ki, k in enumerate(kernels):
        reads, rb, wb = _kernel_facts(k)
        ops = " -> ".join(describe(n) for n in _ops_in_order(k))
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
            lines.append(f"  out: {n.cols}x{n.rows} {_type(n)} = {describe(n)} [{label}] "
                         f"<- {facts.deps_text(n)}")
    return "\n".join(lines)


def _dot_escape(s):
    return str(s).replace("\\", "\\\\").replace('"', '\\"')


def explain_dot(kernels, names=None):
    """Graphviz DOT: one cluster per kernel, edges from inputs to ops (dashed: read from memory)."""
    names = names or {}
    kernels = execution_order(kernels)
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
        for n in _ops_in_order(k):
            shape = ""
            label = f"{_dot_escape(describe(n))}\\n{n.cols}x{n.rows} {_type(n)}"
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


def _kernel_layout(k, facts, names):
    """Boxes of kernel ``k`` relative to its frame, its size, and its long edges (those that
    would cross a column of boxes: they are routed along lanes under the boxes)."""
    depth = _local_depth(k)
    member = {id(n) for n in k.nodes}
    outs = {id(n) for n in k.outputs}
    cols = {}
    for n in _ops_in_order(k):                  # execution order, so the picture is stable
        cols.setdefault(depth[id(n)], []).append(n)
    _, rb, wb = _kernel_facts(k)
    header = f"kernel {len(facts.kernel_index)}: grid {k.cols}x{k.rows}, {len(k.nodes)} op(s), " \
             f"reads {rb} B, writes {wb} B"
    facts.kernel_index.append(k)
    boxes, placed = {}, []
    cx, col_h = _PAD * 2, 0
    for c in sorted(cols):
        sizes = []
        for n in cols[c]:
            lines = [describe(n), f"{n.cols}x{n.rows} {_type(n)}"]
            if id(n) in outs:
                lines += [f"-> {names.get(id(n), 'temporary')}", f"<- {facts.deps_text(n)}"]
            sizes.append((n, lines, _box_size(lines)))
        cy = _HEAD
        for n, lines, (w, h) in sizes:
            boxes[id(n)] = (cx, cy, w, h)
            placed.append((n, lines, id(n) in outs))
            cy += h + _GAP_Y
        col_h = max(col_h, cy - _HEAD)
        cx += max(w for _, _, (w, _h) in sizes) + _GAP_X
    long_edges = []
    for n in k.nodes:
        for i in n.inputs:
            i = resolved(i)
            far = depth[id(n)] >= 1 and (id(i) not in member or depth[id(i)] < depth[id(n)] - 1)
            if far:
                long_edges.append((id(n), id(i)))
    lanes_top = _HEAD + col_h
    width = max(cx - _GAP_X + _PAD * 2, len(header) * _CW + 2 * _PAD)
    height = lanes_top + _LANE * len(long_edges) + _PAD
    return dict(k=k, header=header, boxes=boxes, placed=placed, long=long_edges, lanes_top=lanes_top,
                w=width, h=height, member=member)


_LANE = 7


def explain_svg(kernels, names=None):
    """A standalone SVG picture of the plan: phases left to right, the kernels of one phase
    stacked, memory inputs in the first column (see the module docstring)."""
    names = names or {}
    kernels = execution_order(kernels)
    facts = _Facts(kernels)
    facts.kernel_index = []
    lays = [_kernel_layout(k, facts, names) for k in kernels]
    # phases (levels) are columns; the kernels of a phase are stacked in launch order
    levels = sorted({k.level for k in kernels})
    x = _MARGIN + _SRC_W + _GAP_X
    top = _MARGIN + 22
    bottom = top
    for lv in levels:
        col = [L for L in lays if L["k"].level == lv]
        y = top
        for L in col:
            L["x"], L["y"] = x, y
            y += L["h"] + _GAP_Y * 3
        bottom = max(bottom, y)
        x += max(L["w"] for L in col) + _GAP_X * 2
    right = x - _GAP_X * 2
    absbox, out_box = {}, {}
    body = []
    for ki, L in enumerate(lays):
        fx, fy = L["x"], L["y"]
        body.append(f'<g class="kernel" id="kernel{ki}">')
        body.append(f'<rect x="{fx:.1f}" y="{fy:.1f}" width="{L["w"]:.1f}" height="{L["h"]:.1f}" rx="6" '
                    'fill="#eef4fb" stroke="#4a78a8" stroke-width="1.2"/>')
        body += _text(fx + _PAD, fy - 4, [L["header"]], weight="bold")
        for n, lines, is_out in L["placed"]:
            bx, by, w, h = L["boxes"][id(n)]
            bx, by = bx + fx, by + fy
            absbox[(ki, id(n))] = (bx, by, w, h)
            if is_out:
                out_box.setdefault(id(n), (bx, by, w, h))
            stroke = ' stroke-width="2.2"' if is_out else ""
            fill = "#fff7e0" if is_out else "#ffffff"
            body.append(f'<rect class="op" x="{bx:.1f}" y="{by:.1f}" width="{w:.1f}" height="{h:.1f}" '
                        f'rx="3" fill="{fill}" stroke="#333333"{stroke}/>')
            body += _text(bx + _PAD, by, lines, weight="bold")
        body.append("</g>")

    # memory inputs, each level with its first consumer where there is room
    src_pos, sy_next, first_use = {}, top, {}
    for ki, L in enumerate(lays):
        for n in L["k"].nodes:
            for i in n.inputs:
                i = resolved(i)
                if i.is_source and id(i) not in first_use:
                    first_use[id(i)] = absbox[(ki, id(n))][1]
    for si, v in enumerate(facts.source_list):
        lines = [f"m{si}: memory", f"{v.cols}x{v.rows} {_type(v)}"]
        w, h = _box_size(lines)
        w = min(max(w, 120), _SRC_W)
        sy = max(first_use[id(v)], sy_next)
        src_pos[id(v)] = (_MARGIN, sy, w, h)
        body.append(f'<ellipse class="memory" cx="{_MARGIN + w / 2:.1f}" cy="{sy + h / 2:.1f}" rx="{w / 2:.1f}" '
                    f'ry="{h / 2 + 3:.1f}" fill="#e8f5e9" stroke="#2e7d32"/>')
        body += _text(_MARGIN + w / 2, sy, lines, anchor="middle")
        sy_next = sy + h + _GAP_Y * 2

    # edges: solid inside a kernel (registers), dashed through memory; long ones along lanes
    edges = []
    for ki, L in enumerate(lays):
        lane_of = {e: j for j, e in enumerate(L["long"])}
        for n in L["k"].nodes:
            tx, ty, _, th = absbox[(ki, id(n))]
            for i in n.inputs:
                i = resolved(i)
                if id(i) in L["member"]:
                    sx, sy, sw, sh = absbox[(ki, id(i))]
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
                lane = lane_of.get((id(n), id(i)))
                if lane is not None:
                    ly = L["y"] + L["lanes_top"] + _LANE * lane
                    lx = max(ax + 16, L["x"] + 4)
                    rx = bx - 18
                    path = (f"M{ax:.1f},{ay:.1f} C{lx:.1f},{ay:.1f} {ax + 4:.1f},{ly:.1f} {lx:.1f},{ly:.1f} "
                            f"L{rx:.1f},{ly:.1f} C{bx - 4:.1f},{ly:.1f} {rx:.1f},{by:.1f} {bx:.1f},{by:.1f}")
                else:
                    mid = (ax + bx) / 2
                    path = f"M{ax:.1f},{ay:.1f} C{mid:.1f},{ay:.1f} {mid:.1f},{by:.1f} {bx:.1f},{by:.1f}"
                edges.append(f'<path class="edge" d="{path}" fill="none" stroke="#555555" stroke-width="1.1"'
                             f'{dash} marker-end="url(#arrow)"/>')

    width = max(right, _MARGIN + _SRC_W) + _MARGIN
    height = max(bottom, sy_next) + _MARGIN + 18
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
