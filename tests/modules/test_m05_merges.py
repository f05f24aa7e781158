"""Module 05's MERGE helpers that need no Spark."""
from deliverylab.modules.m05 import merges


def test_table_versions_counts_the_commit_files(tmp_path):
    assert merges.table_versions(str(tmp_path)) == 0           # not a table yet
    log = tmp_path / "_delta_log"
    log.mkdir()
    for version in range(3):
        (log / f"{version:020d}.json").write_text("{}\n")
    (log / "00000000000000000002.checkpoint.parquet").write_text("")   # not a commit
    (log / "_commits").mkdir()
    assert merges.table_versions(str(tmp_path)) == 3


def test_merge_error_names_the_error_class():
    error = Exception("[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] Cannot perform Merge ...")
    assert merges.merge_error(error) == "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"
    assert merges.merge_error(ValueError("no class")) == "ValueError"
