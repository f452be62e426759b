"""The contracts of the operators behind most device-side asserts, checked on summaries of their arguments.

The diagnosis (culprit/diagnose.py) sees each PyTorch operator before it runs. For the operators listed here it
reads the value range of their index tensors and asks the operator's rule whether the arguments keep the
operator's contract: an embedding's indices below its number of rows, a loss's targets below its number of
classes (ignore_index aside), a gather's positions inside the gathered dimension, and so on. A rule sees no
tensors, only `Arg` summaries (dtype, shape, device, and for index tensors their minimum and maximum), so the
rules are plain Python that runs, and is tested, without torch.

    RULES["aten::embedding"].check({"weight": Arg(...), "indices": Arg(...)})  ->  "indices int64[8,128] ..."

Each rule names the arguments whose range it needs (`ranges`), and for one of them the argument whose value is
to be left out of the range (`exclude`: a loss's ignore_index).
"""

__all__ = ["Arg", "Rule", "RULES", "describe"]


class Arg:
    """A summary of one argument: a tensor (dtype, shape, device, value range when read), a list of them, or a
    plain value."""

    __slots__ = ("dtype", "shape", "device", "lo", "hi", "base", "value", "items", "excluded")

    def __init__(self, dtype=None, shape=None, device=None, lo=None, hi=None, base=None, value=None, items=None,
                 excluded=None):
        self.dtype = dtype          # "int64", "float32", ... (None: not a tensor)
        self.shape = tuple(shape) if shape is not None else None
        self.device = device        # "cuda:0", "cpu"
        self.lo, self.hi = lo, hi   # the range read (None: not read)
        self.base = tuple(base) if base is not None else None   # the shape of the tensor this one views
        self.value = value          # a plain argument (int, float, bool, None, str)
        self.items = items          # a list argument: a list of Arg (None for absent entries)
        self.excluded = excluded    # the value left out of lo..hi (a loss's ignore_index)

    @property
    def is_tensor(self):
        return self.dtype is not None

    @property
    def is_integer(self):
        return self.dtype is not None and (self.dtype.startswith("int") or self.dtype.startswith("uint"))

    @property
    def has_range(self):
        return self.lo is not None and self.hi is not None

    def size(self, dim):
        """The size of dimension dim (negative counts from the end), or None."""
        if self.shape is None:
            return None
        n = len(self.shape)
        if n == 0:
            return 1 if dim in (0, -1) else None
        if dim < 0:
            dim += n
        return self.shape[dim] if 0 <= dim < n else None

    def numel(self):
        if self.shape is None:
            return None
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self):
        return "Arg(%s)" % describe(self)


def _dims(shape):
    return "[" + ",".join(str(s) for s in shape) + "]"


def describe(a, with_range=True):
    """"int64[2,16,16,16] cuda:0 [0, 20]", "float32[4,14] cuda:0 (a view of float32[4,2,7])", "None", "1"."""
    if a is None:
        return "None"
    if a.items is not None:
        return "[" + ", ".join(describe(x, with_range) for x in a.items) + "]"
    if not a.is_tensor:
        return repr(a.value)
    text = "%s%s" % (a.dtype, _dims(a.shape or ()))
    if a.device:
        text += " " + a.device
    if with_range and a.has_range:
        text += " [%s, %s]" % (a.lo, a.hi)
        if a.excluded is not None:
            text += " without %s" % a.excluded
    if a.base is not None and a.base != a.shape:
        text += " (a view of %s%s)" % (a.dtype, _dims(a.base))
    return text


def _bad_value(a, lo, hi):
    """The value of index summary a that falls outside lo..hi (both included), or None when all fit."""
    if not a or not a.has_range:
        return None
    if a.hi > hi:
        return a.hi
    if a.lo < lo:
        return a.lo
    return None


def _out_of(a, label, lo, hi, what):
    """The problem text when a's range leaves lo..hi: "<label> <a> holds <v>, but <what>"."""
    v = _bad_value(a, lo, hi)
    if v is None:
        return ""
    return "%s %s holds %s, but %s (valid %s..%s)" % (label, describe(a, with_range=False), v, what, lo, hi)


def _value(args, name, default=None):
    a = args.get(name)
    return default if a is None or a.is_tensor or a.items is not None else a.value


def _dim(args, name="dim"):
    d = _value(args, name, 0)
    return d if isinstance(d, int) else 0


class Rule:
    """An operator's contract: check(args) returns "" or what is wrong. ranges: the arguments whose value
    range check() needs; exclude: {range argument: the argument holding the value to leave out}."""

    def __init__(self, check, ranges=(), exclude=None):
        self.check = check
        self.ranges = tuple(ranges)
        self.exclude = dict(exclude or {})


# ---- the rules ------------------------------------------------------------------------------------------------


def _embedding(args):
    w, idx = args.get("weight"), args.get("indices")
    rows = w.size(0) if w else None
    if rows is None:
        return ""
    return _out_of(idx, "indices", 0, rows - 1,
                   "weight %s has %d rows" % (describe(w), rows))


def _embedding_bag(args):
    problem = _embedding(args)
    if problem:
        return problem
    idx, off = args.get("indices"), args.get("offsets")
    n = idx.numel() if idx else None
    if off is None or not off.has_range or n is None:
        return ""
    return _out_of(off, "offsets", 0, n, "indices %s has %d entries" % (describe(idx, with_range=False), n))


def _along_dim(index_name, source_name):
    """index_select, gather, scatter, index_add...: positions in [0, size of the source's dimension dim)."""

    def check(args):
        src, idx = args.get(source_name), args.get(index_name)
        if src is None or not src.is_tensor:
            return ""
        dim = _dim(args)
        size = src.size(dim)
        if size is None:
            return ""
        return _out_of(idx, index_name, 0, size - 1,
                       "%s %s has %d entries along dim %d" % (source_name, describe(src), size, dim))

    return check


def _advanced_index(args):
    """x[idx0, idx1, ...]: integer index k addresses a dimension of self; [-size, size) is valid."""
    src, lst = args.get("self"), args.get("indices")
    if src is None or lst is None or lst.items is None:
        return ""
    dim = 0
    for k, a in enumerate(lst.items):
        if a is None or not a.is_tensor:
            dim += 1
            continue
        if a.dtype == "bool" or not a.is_integer:  # a mask covers as many dimensions as it has
            dim += len(a.shape or ()) or 1
            continue
        size = src.size(dim)
        if size is not None:
            problem = _out_of(a, "indices[%d]" % k, -size, size - 1,
                              "self %s has %d entries along dim %d" % (describe(src), size, dim))
            if problem:
                return problem
        dim += 1
    return ""


def _take(args):
    src, idx = args.get("self"), args.get("index")
    n = src.numel() if src else None
    if not n:
        return ""
    return _out_of(idx, "index", -n, n - 1, "self %s has %d elements" % (describe(src), n))


def _classes(logits):
    if logits is None or not logits.shape:
        return None
    return logits.shape[1] if len(logits.shape) >= 2 else logits.shape[0]


def _nll(args):
    """nll_loss (cross_entropy's second half): targets in [0, classes), ignore_index aside."""
    x, t = args.get("self"), args.get("target")
    c = _classes(x)
    if c is None or t is None or not t.is_integer:
        return ""
    ignore = _value(args, "ignore_index", -100)
    v = _bad_value(t, 0, c - 1)
    if v is None or v == ignore:
        return ""
    return "target %s holds %s, but input %s has %d classes (valid 0..%d, ignore_index %s)" % (
        describe(t, with_range=False), v, describe(x), c, c - 1, ignore)


def _last_dim_classes(lowest):
    """Margin losses: targets in [lowest, classes); multilabel_margin's -1 ends a row's labels."""
    def check(args):
        x, t = args.get("self"), args.get("target")
        if x is None or not x.shape or t is None:
            return ""
        c = x.shape[-1]
        return _out_of(t, "target", lowest, c - 1, "input %s has %d classes" % (describe(x), c))

    return check


def _ctc(args):
    lp, t = args.get("log_probs"), args.get("targets")
    if lp is None or not lp.shape or len(lp.shape) < 3 or t is None:
        return ""
    c = lp.shape[2]
    return _out_of(t, "targets", 0, c - 1, "log_probs %s has %d classes" % (describe(lp), c))


def _bincount(args):
    x = args.get("self")
    if x is None or not x.has_range or x.lo >= 0:
        return ""
    return "self %s holds %s, but bincount counts non-negative values only" % (describe(x, with_range=False),
                                                                              x.lo)


def _histc(args):
    bins, lo, hi = _value(args, "bins", 100), _value(args, "min", 0), _value(args, "max", 0)
    if isinstance(bins, int) and bins <= 0:
        return "bins is %d, but histc needs at least one bin" % bins
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        return "min %s is above max %s" % (lo, hi)
    return ""


_SCATTER = Rule(_along_dim("index", "self"), ranges=("index",))
_INDEX = Rule(_advanced_index, ranges=("indices",))
_NLL = Rule(_nll, ranges=("target",), exclude={"target": "ignore_index"})

RULES = {
    "aten::embedding": Rule(_embedding, ranges=("indices",)),
    "aten::embedding_bag": Rule(_embedding_bag, ranges=("indices", "offsets")),
    "aten::_embedding_bag": Rule(_embedding_bag, ranges=("indices", "offsets")),
    "aten::_embedding_bag_forward_only": Rule(_embedding_bag, ranges=("indices", "offsets")),
    "aten::index_select": Rule(_along_dim("index", "self"), ranges=("index",)),
    "aten::gather": Rule(_along_dim("index", "self"), ranges=("index",)),
    "aten::scatter": _SCATTER,
    "aten::scatter_": _SCATTER,
    "aten::scatter_add": _SCATTER,
    "aten::scatter_add_": _SCATTER,
    "aten::scatter_reduce": _SCATTER,
    "aten::scatter_reduce_": _SCATTER,
    "aten::index_add": _SCATTER,
    "aten::index_add_": _SCATTER,
    "aten::index_copy": _SCATTER,
    "aten::index_copy_": _SCATTER,
    "aten::index_fill": _SCATTER,
    "aten::index_fill_": _SCATTER,
    "aten::index_reduce": _SCATTER,
    "aten::index_reduce_": _SCATTER,
    "aten::index": _INDEX,
    "aten::_unsafe_index": _INDEX,
    "aten::index_put": _INDEX,
    "aten::index_put_": _INDEX,
    "aten::_index_put_impl_": _INDEX,
    "aten::_unsafe_index_put": _INDEX,
    "aten::take": Rule(_take, ranges=("index",)),
    "aten::put": Rule(_take, ranges=("index",)),
    "aten::put_": Rule(_take, ranges=("index",)),
    "aten::nll_loss_forward": _NLL,
    "aten::nll_loss2d_forward": _NLL,
    "aten::nll_loss_backward": _NLL,
    "aten::nll_loss2d_backward": _NLL,
    "aten::multi_margin_loss": Rule(_last_dim_classes(0), ranges=("target",)),
    "aten::multilabel_margin_loss_forward": Rule(_last_dim_classes(-1), ranges=("target",)),
    "aten::_ctc_loss": Rule(_ctc, ranges=("targets",)),
    "aten::bincount": Rule(_bincount, ranges=("self",)),
    "aten::histc": Rule(_histc),
}
