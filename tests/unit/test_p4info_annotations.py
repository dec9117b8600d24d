"""Annotations as P4Info carries them (text as p4c prints it, structured, doc)."""

from p4.config.v1 import p4info_pb2

from softswitch.frontend import ast
from softswitch.p4info.annotations import add_annotations, add_doc, annotation_text


def test_parsed_annotations_print_as_written_unparsed_ones_token_by_token() -> None:
    assert annotation_text(ast.Annotation("noWarn", body='"unused"')) == '@noWarn("unused")'
    assert annotation_text(ast.Annotation("mode", body=' "fair" ')) == '@mode("fair")'
    assert annotation_text(ast.Annotation("my_anno", body="1,2")) == "@my_anno(1 , 2)"
    assert annotation_text(ast.Annotation("flag")) == "@flag"


def test_name_id_and_doc_are_not_copied_but_doc_is_filled() -> None:
    pre = p4info_pb2.Preamble()
    anns = [ast.Annotation("name", body='"x"'), ast.Annotation("id", body="3"),
            ast.Annotation("brief", body='"short"', exprs=[ast.StringLiteral("short")]),
            ast.Annotation("keep")]
    add_annotations(pre, anns)
    add_doc(pre, anns)
    assert list(pre.annotations) == ["@keep"]
    assert pre.doc.brief == "short"


def test_structured_annotations_fold_constants() -> None:
    pre = p4info_pb2.Preamble()
    kv = {"n": ast.Binary("*", ast.IntLiteral(2), ast.IntLiteral(3)),
          "b": ast.Binary("==", ast.IntLiteral(1), ast.IntLiteral(2))}
    add_annotations(pre, [ast.Annotation("S", kv=kv, structured=True)])
    (sa,) = pre.structured_annotations
    assert [(p.key, p.value.WhichOneof("value")) for p in sa.kv_pair_list.kv_pairs] == [
        ("n", "int64_value"), ("b", "bool_value")]
    assert sa.kv_pair_list.kv_pairs[0].value.int64_value == 6
    assert sa.kv_pair_list.kv_pairs[1].value.bool_value is False
