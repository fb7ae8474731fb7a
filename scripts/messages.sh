#!/usr/bin/env bash
# Refresh the translation catalogue after marking strings (docs/i18n.md): makemessages adds the new msgids
# to locale/zh_Hans/LC_MESSAGES/django.po (GNU gettext's xgettext), compilemessages writes the django.mo that
# is committed beside it. tests/test_i18n.py fails while the .mo is out of date or a msgid has no translation.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
export DEBUG=1
"$PY" manage.py makemessages -l zh_Hans -e html,txt,py --add-location=file --no-obsolete \
  -i node_modules -i frontend -i .venv -i notes -i tests -i bench -i docs -i var -i static -i scripts
"$PY" manage.py compilemessages -l zh_Hans --ignore=.venv --ignore=node_modules --ignore=frontend
