// npm's oidc-provider (OpenID Certified), configured for one confidential client and started on
// 127.0.0.1 by crates/web/tests/web/interop.rs. Its built-in development interactions are the
// login and consent pages (any login name and password are accepted); every account has the
// e-mail and organisation the test expects. Settings come from the environment:
// PORT, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, POST_LOGOUT_REDIRECT_URI, EMAIL, ORG_NAME;
// with TLS_CERT and TLS_KEY (PEM files) it serves https (the issuer is then https://127.0.0.1).
import { readFileSync } from 'node:fs';
import https from 'node:https';
import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`server.mjs: the environment variable ${name} is required`);
    process.exit(2);
  }
  return value;
};

const port = Number(env('PORT'));
const tls = process.env.TLS_CERT
  ? { cert: readFileSync(env('TLS_CERT')), key: readFileSync(env('TLS_KEY')) }
  : null;
const issuer = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: env('CLIENT_ID'),
      client_secret: env('CLIENT_SECRET'),
      redirect_uris: [env('REDIRECT_URI')],
      post_logout_redirect_uris: [env('POST_LOGOUT_REDIRECT_URI')],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['org_name', 'organization', 'hd'],
  },
  // Put the scope's claims in the ID token too (the relying party reads them there).
  conformIdTokenClaims: false,
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({
      sub: id,
      email: env('EMAIL'),
      email_verified: true,
      org_name: env('ORG_NAME'),
      // EXTRA_CLAIMS (JSON) adds or replaces claims, as a corporate provider's mappers would.
      ...JSON.parse(process.env.EXTRA_CLAIMS || '{}'),
    }),
  }),
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  cookies: { keys: ['periscope-interop-test-cookie-key'] },
});

provider.on('server_error', (ctx, err) => console.error('server_error', err));

const listening = () => console.log(`oidc-provider listening on ${issuer}`);
if (tls) {
  https.createServer(tls, provider.callback()).listen(port, '127.0.0.1', listening);
} else {
  provider.listen(port, '127.0.0.1', listening);
}
