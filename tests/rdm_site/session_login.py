"""Log in through a site's own login form and print the session cookie (``name=value``).

Run with the site's Python, in its instance folder (``INVENIO_INSTANCE_PATH``):

    <venv>/bin/python session_login.py EMAIL PASSWORD

The form is posted in this process, with Flask's test client, so that the served site's
forked workers answer no request before the test makes its first ones; the session lives in
the site's Redis, where every worker finds it.
"""

from __future__ import annotations

import re
import sys

from invenio_app.factory import create_ui


def main(email: str, password: str) -> int:
    app = create_ui()
    with app.test_client() as client:
        form = client.get("/login/").get_data(as_text=True)
        token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', form)
        data = {"email": email, "password": password}
        if token:
            data["csrf_token"] = token.group(1)
        reply = client.post("/login/", data=data)
        if reply.status_code != 302:
            print(f"login refused: {reply.status_code}", file=sys.stderr)
            return 1
        name = app.config["SESSION_COOKIE_NAME"]
        cookie = client.get_cookie(name)
        if cookie is None:
            print("no session cookie after logging in", file=sys.stderr)
            return 1
        print(f"{name}={cookie.value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
