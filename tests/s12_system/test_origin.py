from shared.testing import assert_stage_origin


def test_stage_is_imported_from_the_expected_copy():
    assert_stage_origin("s12_system")
