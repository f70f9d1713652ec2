"""A demanding SMTP relay for the sign-in tests: aiosmtpd on loopback, writing into a maildir.

Usage: smtp_relay.py PORT MAILDIR MODE CERT KEY USER PASSWORD

MODE is one of
  starttls   STARTTLS offered and required before anything else, AUTH required (PLAIN, LOGIN)
  implicit   TLS from the first byte (SMTPS), AUTH required
  plain      no TLS offered at all, AUTH required over plain text (what a STARTTLS-requiring
             client must refuse to talk to)

Prints "ready" on standard output once it listens. Runs until killed.
"""

import ssl
import sys
import time

from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword


def main():
    port, maildir, mode, cert, key, user, password = sys.argv[1:8]

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login == user.encode()
            and auth_data.password == password.encode()
        )
        # handled=False: aiosmtpd sends the standard 235 or 535 reply itself.
        return AuthResult(success=ok, handled=False)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    kwargs = dict(
        hostname="127.0.0.1",
        port=int(port),
        authenticator=authenticator,
        auth_required=True,
    )
    if mode == "starttls":
        kwargs.update(tls_context=context, require_starttls=True, auth_require_tls=True)
    elif mode == "implicit":
        kwargs.update(ssl_context=context, auth_require_tls=False)
    elif mode == "plain":
        kwargs.update(auth_require_tls=False)
    else:
        sys.exit(f"unknown mode {mode!r}")
    controller = Controller(Mailbox(maildir), **kwargs)
    controller.start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
