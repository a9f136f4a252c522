"""Wire-field declarations live in an attrs-only module the codec re-exports unchanged."""

import attrs
import pytest
from taskcore import codec, wirefield
from taskcore.wirefield import FieldRules, field_rules, wire_field, wire_name


def test_the_codec_re_exports_the_same_objects():
    for name in wirefield.__all__:
        assert getattr(codec, name) is getattr(wirefield, name)


def test_rules_are_recorded_on_the_field_and_the_wire_name_defaults_to_the_attribute():
    @attrs.frozen(kw_only=True)
    class Row:
        task_id: str = wire_field(wire="taskId", max_len=5, pattern=r"[a-z]+")
        plain: int = wire_field(default=0)

    fields = attrs.fields(Row)
    assert wire_name(fields.task_id) == "taskId"
    assert wire_name(fields.plain) == "plain"
    assert field_rules(fields.task_id) == FieldRules(wire="taskId", max_len=5, pattern=r"[a-z]+")
    assert Row(task_id="ab").plain == 0


def test_omit_none_needs_a_none_default():
    with pytest.raises(TypeError):
        wire_field(default=1, omit_none=True)


def test_importing_it_does_not_load_cattrs():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import sys, taskcore.wirefield; print('cattrs' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
