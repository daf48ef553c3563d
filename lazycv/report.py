"""explain(): the kernels a flush would launch for some pending results, as text or DOT."""
from ._types import DEPTH_DTYPE, DEPTH_NAME
from .ir import resolved


def _type(v):
    return f"{DEPTH_NAME[v.depth]}C{v.cn}"


def _nbytes(v):
    return v.rows * v.cols * v.cn * DEPTH_DTYPE[v.depth].itemsize


def _kernel_facts(k, produced):
    """(ops, sources read, bytes read, bytes written) of one planned kernel."""
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
    read = 0
    for i in reads:
        read += _nbytes(i)
    return reads, read, written


def explain_plan(kernels, names=None):
    names = names or {}
    lines = [f"lazycv plan: {len(kernels)} kernel(s)"]
    produced = {}
    for ki, k in enumerate(kernels):
        reads, rb, wb = _kernel_facts(k, produced)
        ops = " -> ".join(n.op.label(n) for n in k.nodes[::-1][::-1])
        lines.append(f"kernel {ki}: grid {k.cols}x{k.rows}, {len(k.nodes)} op(s), "
                     f"reads {rb} B, writes {wb} B")
        lines.append(f"  ops: {ops}")
        for i in reads:
            src = f"kernel {produced[id(i)]} output" if id(i) in produced else \
                ("memory" if getattr(i, "is_source", False) else "pending")
            lines.append(f"  in : {i.cols}x{i.rows} {_type(i)} ({src})")
        for n in k.outputs:
            produced[id(n)] = ki
            label = names.get(id(n), "temporary")
            lines.append(f"  out: {n.cols}x{n.rows} {_type(n)} = {n.op.label(n)} [{label}]")
    return "\n".join(lines)


def explain_dot(kernels):
    """Graphviz DOT: one cluster per kernel, edges from inputs to ops."""
    out = ["digraph lazycv {", "  rankdir=LR;", '  node [shape=box, fontsize=10];']
    ids, n_src = {}, 0

    def nid(v):
        nonlocal n_src
        v = resolved(v)
        if id(v) not in ids:
            if v.is_source:
                ids[id(v)] = f"src{n_src}"
                n_src += 1
                out.append(f'  {ids[id(v)]} [label="memory\\n{v.cols}x{v.rows} {_type(v)}", shape=ellipse];')
            else:
                ids[id(v)] = f"n{len(ids)}"
        return ids[id(v)]

    for ki, k in enumerate(kernels):
        _, rb, wb = _kernel_facts(k, {})
        out.append(f"  subgraph cluster_{ki} {{")
        out.append(f'    label="kernel {ki}: {k.cols}x{k.rows}, reads {rb} B, writes {wb} B";')
        for n in k.nodes:
            shape = ", peripheries=2" if n in k.outputs else ""
            out.append(f'    {nid(n)} [label="{n.op.label(n)}\\n{n.cols}x{n.rows} {_type(n)}"{shape}];')
        out.append("  }")
    for k in kernels:
        for n in k.nodes:
            for i in n.inputs:
                out.append(f"  {nid(i)} -> {nid(n)};")
    out.append("}")
    return "\n".join(out)
