"""library_structs: where ATen's multi-tensor metadata holds no address, from its
kernel's symbol and its parameter's size; and the relocator taking no address there."""
import struct

from pgcc.library_structs import metadata_layout, value_ranges
from pgcc.relocate import Buffers, Relocator

FUSED_ADAMW = ("_ZN2at6native52_GLOBAL__N__c815dac0_19_fused_adamw_impl_cu_8b44fa2325multi_tensor_apply_kernelINS0_"
               "32FusedOptimizerTensorListMetadataILi4ELb0EEENS1_20FusedAdamMathFunctorIfLi4ELNS0_8ADAM_MODEE1ELb0E"
               "EEJPKdddddbPKfSA_EEEvT_T0_DpT1_")
FOREACH_ADD = ("_ZN2at6native55_GLOBAL__N__d25d856e_22_ForeachBinaryOpList_cu_a911ec4325multi_tensor_apply_kernelINS1_"
               "18TensorListMetadataILi2EEENS1_24BinaryOpListAlphaFunctorIfLi2ELi2ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_")
SCALAR_LIST = ("_ZN2at6native57_GLOBAL__N__x_multi_tensor_apply_kernelINS1_28TensorListScalarListMetadataIfLi1ELb0EEE"
               "NS1_21BinaryOpScalarListFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEEEEvT_T0_DpT1_")


def test_fused_optimizer_metadata_addresses_and_step_counts_only():
    # FusedOptimizerTensorListMetadata<4>: addresses[4][36], numel[36], state_steps[36],
    # block_to_tensor[320] (bytes), block_to_chunk[320], start_tensor_this_launch: 3336 bytes
    assert metadata_layout("FusedOptimizerTensorListMetadata", 4, 3336) == [(0, 1152), (1440, 1728)]
    layout = [(0, 3336), (3336, 8), (3344, 8)]
    assert value_ranges(FUSED_ADAMW, layout) == [(1152, 1440), (1728, 3336)]
    # 32 KiB parameters: 16-bit block tables, 252 tensors at depth 4
    big = 8 * 4 * 252 + 8 * 252 + 8 * 252 + 2 * 2240 + 4 * 2240 + 4
    assert metadata_layout("FusedOptimizerTensorListMetadata", 4, -(-big // 8) * 8) == [(0, 8064), (10080, 12096)]


def test_plain_and_scalar_list_metadata():
    # TensorListMetadata<2>: addresses[2][64], numel[64], block tables, start: 3144 bytes
    assert value_ranges(FOREACH_ADD, [(0, 3144), (3144, 8)]) == [(1024, 3144)]
    # TensorListScalarListMetadata<float, 1>: addresses[1][96], numel[96], scalars[96] of 4 bytes, tables
    size = -(-(8 * 96 + 8 * 96 + 4 * 96 + 320 + 4 * 320) // 8) * 8
    assert value_ranges(SCALAR_LIST, [(0, size)]) == [(768, size)]
    # the same struct of doubles is larger: the size tells which
    assert metadata_layout("TensorListScalarListMetadata", 1, size + 384) == [(0, 768)]


def test_other_kernels_and_unknown_sizes_get_no_ranges():
    assert value_ranges("triton_poi_fused_add_0", [(0, 8)]) == []
    assert value_ranges(FUSED_ADAMW, [(0, 3000)]) == []  # (a layout no configuration has)
    assert value_ranges(FUSED_ADAMW, []) == [] and value_ranges(None, [(0, 8)]) == []


def test_a_block_table_that_reads_as_an_address_is_no_relocation():
    """The BERT step's fused AdamW: block_to_tensor[32..35] = 32..35 beside two stale bytes
    of an old pointer read 0x00007f3023222120, inside a block the export owned, in every
    capture.  With the struct's value ranges it stays bytes; a real address in the
    address table is still relocated."""
    blk = 0x7F30_2200_0000
    bufs = Buffers()
    bufs.add(name="w", size=1 << 25, role="weight", ranges={c: blk for c in range(3)})
    rel = Relocator(bufs, [[(blk, 1 << 25)]] * 3, None)
    meta = bytearray(3336)
    struct.pack_into("<Q", meta, 0, blk + 4096)  # addresses[0][0]
    meta[1728 + 32:1728 + 40] = bytes([32, 33, 34, 35, 0x30, 0x7F, 0, 0])  # block_to_tensor[32..39]
    assert struct.unpack_from("<Q", meta, 1760)[0] == blk + 0x1222120  # (it reads as an address in w)
    layout = [(0, 3336)]
    ptr_words = set()
    (arg,) = rel.kernel_args(layout, [bytes(meta)] * 3, "node 158", ptr_words, [],
                             values=value_ranges(FUSED_ADAMW, layout))
    kind, raw, relocs = arg
    assert kind == "bytes" and [(r.at, r.buffer.name, r.offset) for r in relocs] == [(0, "w", 4096)]
    assert raw[1760:1768] == meta[1760:1768] and ptr_words == {(0, 0, "abs64")}
    # without them (what the relocator did before): the block table was taken for an address
    (arg,) = Relocator(bufs, [[(blk, 1 << 25)]] * 3, None).kernel_args(layout, [bytes(meta)] * 3, "node 158", set(), [])
    assert [r.at for r in arg[2]] == [0, 1760]
