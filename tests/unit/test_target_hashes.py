"""BMv2-identical hash and checksum algorithms (standard check values)."""

from softswitch.core import hashes

CHECK = b"123456789"


def test_crc_check_values():
    assert hashes.crc16(CHECK) == 0xBB3D          # CRC-16/ARC
    assert hashes.crc32(CHECK) == 0xCBF43926      # CRC-32/IEEE
    assert hashes.crc_ccitt(CHECK) == 0x29B1      # CRC-16/CCITT-FALSE
    assert hashes.ALGORITHMS["crc16_custom"](CHECK) == 0xBB3D
    assert hashes.ALGORITHMS["crc32_custom"](CHECK) == 0xCBF43926


def test_internet_checksum_of_ipv4_header():
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert hashes.csum16(hdr) == 0xB861
    # odd lengths are padded with a zero byte
    assert hashes.csum16(b"\x01") == hashes.csum16(b"\x01\x00")


def test_xor16_and_identity():
    assert hashes.xor16(b"\x12\x34\x56\x78") == 0x1234 ^ 0x5678
    assert hashes.xor16(b"\x12\x34\x56") == 0x1234 ^ 0x5600
    assert hashes.identity(b"\x01\x02") == 0x0102
    assert hashes.identity(bytes(range(10))) == int.from_bytes(bytes(range(8)), "big")


def test_pack_fields_bit_packs_and_pads():
    assert hashes.pack_fields([0x1, 0x2], [4, 4]) == b"\x12"
    assert hashes.pack_fields([0x1, 0x1], [4, 1]) == b"\x18"


def test_hash_offset_rule():
    assert hashes.hash_offset(10, 1234, 100) == 10 + 34
    assert hashes.hash_offset(5, 1234, 0) == 5
