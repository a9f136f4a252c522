#!/usr/bin/env bash
# Lint the service's OpenAPI document with Redocly's recommended rules (not our own checks).
#
#   scripts/redocly-lint.sh
#
# Generates the document the running service serves (`openapi_document` of the default
# registry) and runs `npx @redocly/cli lint` on it (pinned; needs node and the npm registry;
# not part of .ci/run). Exits non-zero on any error; warnings are printed. The one expected
# warning is info-license (the project declares no license).
set -euo pipefail
cd "$(dirname "$0")/.."

REDOCLY="@redocly/cli@${REDOCLY_VERSION:-2.77.0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.venv/bin/python -c '
import json
from taskcore.service import default_registry
from taskhttp.openapi import openapi_document
print(json.dumps(openapi_document(default_registry())))' > "$work/openapi.json"
npx --yes "$REDOCLY" lint "$work/openapi.json" --format=stylish
