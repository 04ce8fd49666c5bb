import { createHash, randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { TestApp } from './test-app.js';
import type { CreatedUser } from './users.js';

export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  redirect_uris: string[];
}

export const REDIRECT_URI = 'http://127.0.0.1:53682/callback';

export async function registerClient(
  t: TestApp,
  metadata: Record<string, unknown> = {},
): Promise<RegisteredClient> {
  const response = await t.http
    .post('/oauth/register')
    .send({
      client_name: 'Test agent',
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      ...metadata,
    })
    .expect(201);
  return response.body as RegisteredClient;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The value of a named hidden field in a page of the flow (HTML-escaped as the pages write it). */
export function formField(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no field ${name} in:\n${html}`);
  return match[1].replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
}

/**
 * A browser as far as the authorization pages need one: a cookie jar, redirects followed by hand, and
 * the Fetch Metadata header a browser sets on a form our own page submits.
 */
export class FormBrowser {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly base: string) {}

  get cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  async request(
    url: string,
    init: { method?: string; form?: Record<string, string | string[]>; site?: string } = {},
  ) {
    const headers: Record<string, string> = { 'Sec-Fetch-Site': init.site ?? 'same-origin' };
    if (this.cookies.size > 0) headers.Cookie = this.cookieHeader;
    let body: URLSearchParams | undefined;
    if (init.form) {
      body = new URLSearchParams();
      for (const [name, value] of Object.entries(init.form)) {
        for (const one of [value].flat()) body.append(name, one);
      }
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(new URL(url, this.base), {
      method: init.method ?? (body ? 'POST' : 'GET'),
      headers,
      body,
      redirect: 'manual',
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const separator = pair.indexOf('=');
      this.cookies.set(pair.slice(0, separator), pair.slice(separator + 1));
    }
    return {
      status: response.status,
      location: response.headers.get('location'),
      text: await response.text(),
    };
  }
}

export interface ConsentChoice {
  decision?: 'approve' | 'deny';
  /** The datasets the grant covers: all of the account's by default. */
  datasetIds?: string[];
}

/**
 * What a person does in the browser after a client sends them to `authorizationUrl`: signs in (when
 * the browser has no session), then answers the consent page. Returns the URL the service sends the
 * browser back to (the client's redirect URI with its code or error).
 */
export async function authorizeInBrowser(
  browser: FormBrowser,
  authorizationUrl: string,
  user: CreatedUser,
  choice: ConsentChoice = {},
): Promise<URL> {
  let page = await browser.request(authorizationUrl);
  if (page.status === 302) return new URL(page.location!);
  if (page.text.includes('action="/oauth/sign-in"')) {
    const signedIn = await browser.request('/oauth/sign-in', {
      form: { return_to: formField(page.text, 'return_to'), email: user.user.email, password: user.password },
    });
    if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}:\n${signedIn.text}`);
    page = await browser.request(signedIn.location!);
  }
  if (page.status !== 200) throw new Error(`authorization answered ${page.status}:\n${page.text}`);
  const decided = await browser.request('/oauth/authorize/decision', {
    form: {
      request_id: formField(page.text, 'request_id'),
      decision: choice.decision ?? 'approve',
      datasets: choice.datasetIds ? 'chosen' : 'all',
      dataset_ids: choice.datasetIds ?? [],
    },
  });
  if (decided.status !== 303) throw new Error(`consent answered ${decided.status}:\n${decided.text}`);
  return new URL(decided.location!);
}

export interface AuthorizationOptions extends ConsentChoice {
  scope?: string;
  resource?: string;
  redirectUri?: string;
  state?: string;
}

/** The authorization request of a client, as query parameters of /oauth/authorize. */
export function authorizationUrl(
  t: TestApp,
  client: RegisteredClient,
  challenge: string,
  options: AuthorizationOptions = {},
) {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: options.redirectUri ?? client.redirect_uris[0],
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: options.state ?? 'some-state',
    resource: options.resource ?? `${t.url}/v1`,
    ...(options.scope ? { scope: options.scope } : {}),
  });
  return `/oauth/authorize?${params.toString()}`;
}

/** A whole authorization by hand: the code, and what redeeming it needs. */
export async function authorizationCode(
  t: TestApp,
  client: RegisteredClient,
  user: CreatedUser,
  options: AuthorizationOptions = {},
): Promise<{ code: string; verifier: string; redirectUri: string }> {
  const { verifier, challenge } = pkcePair();
  const back = await authorizeInBrowser(
    new FormBrowser(t.url),
    authorizationUrl(t, client, challenge, options),
    user,
    options,
  );
  const code = back.searchParams.get('code');
  if (!code) throw new Error(`no code in ${back.href}`);
  return { code, verifier, redirectUri: options.redirectUri ?? client.redirect_uris[0] };
}

/** POSTs a form to the token endpoint (or another OAuth endpoint) and returns status and JSON body. */
export async function postForm(
  t: TestApp,
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const response = await t.http.post(path).type('form').set(headers).send(form);
  return {
    status: response.status,
    body: response.body as Record<string, string>,
    headers: response.headers,
  };
}

export async function exchangeCode(
  t: TestApp,
  client: RegisteredClient,
  grant: { code: string; verifier: string; redirectUri: string },
  extra: Record<string, string> = {},
) {
  return postForm(t, '/oauth/token', {
    grant_type: 'authorization_code',
    client_id: client.client_id,
    code: grant.code,
    code_verifier: grant.verifier,
    redirect_uri: grant.redirectUri,
    ...extra,
  });
}

/** Tokens for the user through the whole flow, by hand. */
export async function tokensFor(
  t: TestApp,
  client: RegisteredClient,
  user: CreatedUser,
  options: AuthorizationOptions = {},
) {
  const exchanged = await exchangeCode(t, client, await authorizationCode(t, client, user, options));
  if (exchanged.status !== 200)
    throw new Error(`token endpoint answered ${exchanged.status}: ${JSON.stringify(exchanged.body)}`);
  return exchanged.body as unknown as {
    access_token: string;
    refresh_token: string;
    scope: string;
    expires_in: number;
  };
}

/**
 * The MCP SDK's own client, as an agent runs it: its provider keeps what the SDK hands it, and sends
 * "the person" through sign-in and consent over HTTP when the SDK asks for a redirect.
 */
export class TestClientProvider implements OAuthClientProvider {
  information?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  returnedTo?: URL;

  constructor(
    private readonly browser: FormBrowser,
    private readonly user: CreatedUser,
  ) {}

  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP SDK test client',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return 'sdk-state';
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL) {
    this.returnedTo = await authorizeInBrowser(this.browser, url.href, this.user);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}
