"""An in-place view op (`squeeze_`, `unsqueeze_`, `t_`) on a lazy tensor: new sizes, same values;
and the one in-place write refused: into a view, which would not reach its base.

torch_xla: functionalization, which replays `squeeze_` on the tensor's base as `squeeze_copy`
(aten_xla_type.cpp; tensor_methods.cpp keeps only `unsqueeze_`, setting the IR value in place),
and tensor_impl.cpp (`XLATensorImpl::SetupSizeProperties`: the sizes PyTorch sees follow the
new shape). PyTorch's matmul of a vector and a matrix (`vec @ mat`, `F.linear` of a 1-d input)
squeezes its fresh product in place, so these ops are on the path of ordinary code. The tensor's
XLATensorData keeps its identity (the arena, and the views taken of it, know it by it) and takes
the view's aval and IR value; the PyTorch tensor takes the view's sizes and strides through
`set_data` (the `.data` setter), which hands it the view's storage, given back that data.
"""

from __future__ import annotations

from .register_xla import storage_use_count
from .tensor import LazyTensor, get_xla_tensor


def set_view_in_place(dst: LazyTensor, view: LazyTensor) -> LazyTensor:
    """`dst` now stands for `view`, the out-of-place view op's result: its IR value, its aval
    and, for PyTorch, its sizes. Refused where another tensor shares `dst`'s storage: it would
    keep the old sizes over data of the new shape."""
    if storage_use_count(dst) > 1:
        raise NotImplementedError(
            f"an in-place view op changes the shape {tuple(dst.shape)} of a lazy tensor that "
            f"another tensor shares (a detach, .data, a parameter, a tensor saved for "
            f"backward); use the op that returns a new tensor (squeeze for squeeze_)")
    data, new = get_xla_tensor(dst), get_xla_tensor(view)
    data.aval = new.aval
    data.set_ir_value(new.get_ir_value())  # the same values: the views of dst stay current
    dst.data = view
    dst.untyped_storage()._xla = data
    return dst


def refuse_write_through_view(dst: LazyTensor) -> None:
    """A view holds its own IR value (there is no functionalization): a write into it would
    not reach its base, so it is refused, never lost (copy_ and the CPU fallback ask)."""
    base = dst._base
    if base is not None and get_xla_tensor(base) is not get_xla_tensor(dst):
        raise NotImplementedError(f"in place on a view {tuple(dst.shape)} of a lazy tensor "
                                  f"{tuple(base.shape)}: it would not reach the base")
