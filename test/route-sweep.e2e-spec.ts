import { registerClient } from './utils/oauth.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { createUser, SAME_ORIGIN, signIn } from './utils/users.js';

/**
 * Every route the application serves, as `node dist/cli.js routes` lists them from its controllers,
 * sent what a hostile or careless client sends: no body, a body of every wrong type, and U+0000 and
 * lone surrogates in every string it reads; then a burst of them all. A route added tomorrow is in
 * the list tomorrow.
 */
interface ListedRoute {
  method: string;
  path: string;
  controller: string;
  access: { kind: 'public' | 'authenticated' | 'public-readable' | 'session'; limit?: 'network' | 'none' };
}

/** The routes that are not rate-limited, each of which reads no database (`/ready` shares its checks). */
const UNLIMITED = [
  'GET /health',
  'GET /ready',
  'GET /.well-known/oauth-authorization-server',
  'GET /.well-known/oauth-protected-resource',
  'GET /.well-known/oauth-protected-resource/v1',
  'GET /.well-known/oauth-protected-resource/v1/mcp',
  'OPTIONS /.well-known/oauth-authorization-server',
  'OPTIONS /.well-known/oauth-protected-resource',
  'OPTIONS /.well-known/oauth-protected-resource/v1',
  'OPTIONS /.well-known/oauth-protected-resource/v1/mcp',
  'OPTIONS /oauth/register',
  'OPTIONS /oauth/token',
  'OPTIONS /oauth/revoke',
  'GET /oauth2-redirect.html',
  'GET /v1/mcp',
  'GET /v1/mcp/datasets/:dataset_id',
  'DELETE /v1/mcp',
  'DELETE /v1/mcp/datasets/:dataset_id',
];

/** The fields of the routes the OpenAPI document does not describe (the authorization server's). */
const UNDOCUMENTED_FIELDS: Record<string, string[]> = {
  'POST /oauth/token': [
    'grant_type',
    'client_id',
    'client_secret',
    'code',
    'code_verifier',
    'redirect_uri',
    'refresh_token',
    'scope',
    'resource',
  ],
  'POST /oauth/revoke': ['token', 'token_type_hint', 'client_id', 'client_secret'],
  'POST /oauth/sign-in': ['email', 'password', 'return_to'],
  'POST /oauth/authorize/decision': ['request_id', 'decision', 'datasets', 'dataset_ids'],
  'POST /oauth/register': [
    'client_name',
    'client_uri',
    'logo_uri',
    'tos_uri',
    'policy_uri',
    'software_id',
    'software_version',
    'scope',
    'token_endpoint_auth_method',
  ],
  'GET /oauth/authorize': [
    'client_id',
    'redirect_uri',
    'response_type',
    'code_challenge',
    'code_challenge_method',
    'scope',
    'state',
    'resource',
  ],
};

const FORM_ROUTES = new Set([
  'POST /oauth/token',
  'POST /oauth/revoke',
  'POST /oauth/sign-in',
  'POST /oauth/authorize/decision',
]);
/**
 * Text PostgreSQL cannot store, as JSON carries it and as a URL does: a lone surrogate has no UTF-8
 * form, so a URL can only carry its CESU-8 bytes, which are not UTF-8 either.
 */
const BAD_TEXT = [
  { text: 'a\u0000b', encoded: 'a%00b' },
  { text: 'a\ud800b', encoded: 'a%ED%A0%80b' },
];
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

type Schema = {
  $ref?: string;
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  example?: unknown;
  enum?: unknown[];
  allOf?: Schema[];
};
type OpenApi = {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema?: Schema }> } }>>;
  components: { schemas: Record<string, Schema> };
};

interface Answer {
  route: string;
  sent: string;
  status: number;
  body: string;
  headers: Headers;
}

describe('Every route', () => {
  let t: TestApp;
  let key: CreatedKey;
  let cookie: string;
  let routes: ListedRoute[];
  let openApi: OpenApi;
  let ids: Record<string, string>;
  let sent = 0;

  beforeAll(async () => {
    t = await startTestApp({
      RATE_LIMIT_API_KEY: '100000',
      RATE_LIMIT_ANONYMOUS: '100000',
      RATE_LIMIT_SESSION: '100000',
      OAUTH_REGISTRATIONS_PER_HOUR: '100000',
      SIGN_IN_MAX_ATTEMPTS: '10000',
    });
    key = await t.createApiKey('sweep');
    const user = await createUser(t, { account: 'sweep', role: 'admin' });
    cookie = await signIn(t, user);
    routes = ((await t.cli('routes')) as { routes: ListedRoute[] }).routes;
    openApi = (await t.http.get('/docs/openapi.json').expect(200)).body as OpenApi;
  }, 90_000); // a server, a user's password hash and the route listing's load of the whole app
  // The destructive routes run last in each test, and delete what the next one needs.
  beforeEach(async () => {
    ids = await fixtures(t, key);
  });
  afterAll(() => t.close());

  /** Sends one request as `caller`, never following redirects. */
  async function send(
    route: ListedRoute,
    caller: 'key' | 'anonymous' | 'session',
    init: { path?: string; query?: string; type?: string; body?: string | Buffer } = {},
  ): Promise<Answer> {
    sent++;
    const headers: Record<string, string> = { Accept: 'application/json, text/event-stream' };
    if (caller === 'key') headers.Authorization = bearer(key).Authorization;
    if (caller === 'session') Object.assign(headers, { Cookie: cookie, ...SAME_ORIGIN });
    if (init.type) headers['Content-Type'] = init.type;
    const path = init.path ?? concrete(route.path, ids);
    const response = await fetch(`${t.url}${path}${init.query ?? ''}`, {
      method: route.method,
      headers,
      body: init.body,
      redirect: 'manual',
    });
    return {
      route: `${route.method} ${route.path}`,
      sent: `${caller} ${init.type ?? '-'} ${String(init.body ?? init.query ?? init.path ?? '').slice(0, 80)}`,
      status: response.status,
      body: await response.text(),
      headers: response.headers,
    };
  }

  /** The callers a route is tried with: its own kind first. */
  function callersOf(route: ListedRoute): ('key' | 'anonymous' | 'session')[] {
    return route.access.kind === 'session' ? ['session', 'anonymous'] : ['key', 'anonymous'];
  }

  /** Destructive routes last, so that the fixtures stand while the others are tried. */
  function ordered(): ListedRoute[] {
    return [...routes].sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
  }

  it('lists the routes of every controller, with an access rule for each', () => {
    const controllers = new Set(routes.map((route) => route.controller));
    for (const name of [
      'DatasetsController',
      'DocumentsController',
      'SearchController',
      'McpController',
      'WebhooksController',
      'OAuthController',
      'AuthorizeController',
      'SessionsController',
      'HealthController',
    ]) {
      expect(controllers).toContain(name);
    }
    for (const route of routes) expect(route.access?.kind).toBeDefined();
  });

  it('answers no body, a body of each wrong type, and a form, with 4xx and an error body, never 5xx', async () => {
    const failures: Answer[] = [];
    for (const route of ordered()) {
      for (const caller of callersOf(route)) {
        const variants: { type?: string; body?: string }[] = [{}];
        if (WITH_BODY.has(route.method)) {
          variants.push(
            ...['[]', '"x"', '5', 'null', 'true', '{}', '{"a": {"b": [1, {"c": null}]}}'].map((body) => ({
              type: 'application/json',
              body,
            })),
            { type: 'application/x-www-form-urlencoded', body: 'a=b&a=c&d[e]=f' },
            { type: 'text/plain', body: 'hello' },
            {
              type: 'multipart/form-data; boundary=x',
              body: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n',
            },
          );
        }
        for (const variant of variants) {
          const answer = await send(route, caller, variant);
          if (!acceptable(answer)) failures.push(answer);
        }
      }
    }
    expect(failures.map(summary)).toEqual([]);
    expect(t.output()).not.toMatch(/"level":50/);
  });

  it('refuses U+0000 and lone surrogates in every string it reads: bodies, forms, queries and paths', async () => {
    const failures: Answer[] = [];
    for (const route of ordered()) {
      const name = `${route.method} ${route.path}`;
      const caller = callersOf(route)[0];
      for (const { text, encoded } of BAD_TEXT) {
        // Path parameters, as a client percent-encodes them.
        for (const param of route.path.match(/:[a-z_]+/g) ?? []) {
          const path = concrete(route.path.replace(param, encoded), ids);
          const answer = await send(route, caller, { path, ...emptyJson(route) });
          if (!refused(answer)) failures.push(answer);
        }
        // Query strings: each documented parameter, and the authorization request's.
        const queryNames = [
          ...documentedQuery(openApi, route),
          ...(route.method === 'GET' ? (UNDOCUMENTED_FIELDS[name] ?? []) : []),
        ];
        for (const field of queryNames) {
          const answer = await send(route, caller, { query: `?${field}=${encoded}` });
          if (!refused(answer)) failures.push(answer);
        }
        if (!WITH_BODY.has(route.method)) continue;
        // Bodies: every string field of the documented schema, or of the route's own list.
        for (const body of stringVariants(bodyFor(openApi, route, ids), text)) {
          const sent = FORM_ROUTES.has(name)
            ? formBody(body, encoded)
            : { type: 'application/json', body: JSON.stringify(body) };
          const answer = await send(route, caller, sent);
          if (!refused(answer)) failures.push(answer);
        }
        // A multipart body carries bytes: a lone surrogate reaches it only as bytes that are not UTF-8,
        // which decode as U+FFFD, so those need only be answered, while U+0000 must be refused.
        if (takesMultipart(openApi, route)) {
          const nul = text.includes('\u0000');
          for (const upload of multipartVariants(nul ? text : '\ud800')) {
            const answer = await send(route, caller, upload);
            if (!(nul ? refused(answer) : acceptable(answer))) failures.push(answer);
          }
        }
      }
    }
    expect(failures.map(summary)).toEqual([]);
    expect(t.output()).not.toMatch(/"level":50/);
    expect(sent).toBeGreaterThan(400);
  });

  it('refuses such text in every argument of every MCP tool, as Invalid params', async () => {
    const list = await send(mcpRoute(), 'key', jsonRpc('tools/list', {}));
    const tools = (JSON.parse(list.body) as { result: { tools: { name: string; inputSchema: Schema }[] } })
      .result.tools;
    expect(tools.length).toBeGreaterThan(3);
    const failures: string[] = [];
    for (const tool of tools) {
      const args = sample(tool.inputSchema, {}, ids) as Record<string, unknown>;
      for (const { text } of BAD_TEXT) {
        for (const variant of stringVariants(args, text)) {
          const answer = await send(
            mcpRoute(),
            'key',
            jsonRpc('tools/call', { name: tool.name, arguments: variant }),
          );
          const error = (JSON.parse(answer.body) as { error?: { code: number } }).error;
          if (answer.status !== 200 || error?.code !== -32602)
            failures.push(
              `${tool.name} ${JSON.stringify(variant)} -> ${answer.status} ${answer.body.slice(0, 200)}`,
            );
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('lists as unlimited only routes that read no database', () => {
    const unlimited = routes
      .filter((route) => route.access.kind === 'public' && route.access.limit === 'none')
      .map((route) => `${route.method} ${route.path}`);
    expect(unlimited.sort()).toEqual([...UNLIMITED].sort());
  });
});

describe('Every route in a burst', () => {
  let t: TestApp;
  let key: CreatedKey;
  let cookie: string;
  let routes: ListedRoute[];
  let ids: Record<string, string>;

  beforeAll(async () => {
    t = await startTestApp({
      // Low enough for the burst to spend each budget: the key's, a session's, and a network's.
      RATE_LIMIT_API_KEY: '150',
      RATE_LIMIT_ANONYMOUS: '20',
      RATE_LIMIT_SESSION: '20',
      RATE_LIMIT_AUTH_ENDPOINTS: '30',
      OAUTH_REGISTRATIONS_PER_HOUR: '100000',
    });
    key = await t.createApiKey('burst');
    const user = await createUser(t, { account: 'burst', role: 'admin' });
    cookie = await signIn(t, user);
    routes = ((await t.cli('routes')) as { routes: ListedRoute[] }).routes;
    ids = await fixtures(t, key);
  }, 90_000);
  afterAll(() => t.close());

  it('answers 1,000 requests over every route with no 5xx, and rate-limits each that reads the database', async () => {
    const calls = Array.from({ length: 1_000 }, (_, i) => routes[i % routes.length]);
    const answers = new Map<string, { status: number; limited: boolean }[]>();
    const fives: string[] = [];
    await inParallel(calls, 50, async (route) => {
      const headers: Record<string, string> = {
        Accept: 'application/json',
        'Content-Type': 'application/json',
      };
      if (route.access.kind === 'session') Object.assign(headers, { Cookie: cookie, ...SAME_ORIGIN });
      else if (route.access.kind !== 'public') headers.Authorization = bearer(key).Authorization;
      const response = await fetch(`${t.url}${concrete(route.path, ids)}`, {
        method: route.method,
        headers,
        body: WITH_BODY.has(route.method) && route.method !== 'DELETE' ? '{}' : undefined,
        redirect: 'manual',
      });
      await response.arrayBuffer();
      const name = `${route.method} ${route.path}`;
      if (response.status >= 500) fives.push(`${name} -> ${response.status}`);
      const list = answers.get(name) ?? [];
      list.push({ status: response.status, limited: response.headers.get('x-ratelimit-limit') !== null });
      answers.set(name, list);
    });
    expect(fives).toEqual([]);
    const unlimited = new Set(UNLIMITED);
    const unmetered: string[] = [];
    const neverRefused: string[] = [];
    for (const [name, list] of answers) {
      if (unlimited.has(name)) continue;
      if (list.some((answer) => !answer.limited)) unmetered.push(name);
      if (!list.some((answer) => answer.status === 429)) neverRefused.push(name);
    }
    expect(unmetered).toEqual([]);
    expect(neverRefused).toEqual([]);
    expect(t.output()).not.toMatch(/"level":50/);
  }, 120_000);
});

/** A dataset with a document, a webhook and an OAuth client of the sweeping account, by path parameter. */
async function fixtures(t: TestApp, key: CreatedKey): Promise<Record<string, string>> {
  const dataset = await t.http
    .post('/v1/datasets')
    .set(bearer(key))
    .send({ name: `Swept ${Math.random()}`, is_public: true })
    .expect(201);
  const document = await t.http
    .post(`/v1/datasets/${dataset.body.id}/documents`)
    .set(bearer(key))
    .send({ content: 'Text to find.', metadata: { title: 'Swept' } })
    .expect(201);
  const webhook = await t.http
    .post('/v1/webhooks')
    .set(bearer(key))
    .send({ url: 'http://127.0.0.1:9/hook', events: ['document.processed'] })
    .expect(201);
  const client = await registerClient(t);
  return {
    dataset_id: dataset.body.id as string,
    document_id: document.body.document_id as string,
    webhook_id: webhook.body.webhook_id as string,
    delivery_id: 'dlv_0000000000000000000000',
    client_id: client.client_id,
  };
}

function concrete(path: string, ids: Record<string, string>): string {
  return path.replace(/:([a-z_]+)/g, (_, name: string) => ids[name] ?? 'x');
}

function mcpRoute(): ListedRoute {
  return { method: 'POST', path: '/v1/mcp', controller: 'McpController', access: { kind: 'authenticated' } };
}

function jsonRpc(method: string, params: unknown) {
  return { type: 'application/json', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) };
}

/** An empty JSON object for a route that takes a body, for requests that vary something else. */
function emptyJson(route: ListedRoute): { type?: string; body?: string } {
  return WITH_BODY.has(route.method) ? { type: 'application/json', body: '{}' } : {};
}

/** A form of the fields, `encoded` written where the bad text is (a form's bytes are a URL's). */
function formBody(fields: Record<string, unknown>, encoded: string) {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) form.append(name, String(value));
  const marked = form.toString().replace(/a%00b|a%EF%BF%BDb/g, encoded);
  return { type: 'application/x-www-form-urlencoded', body: marked };
}

function takesMultipart(openApi: OpenApi, route: ListedRoute): boolean {
  const operation = openApi.paths[route.path.replace(/:([a-z_]+)/g, '{$1}')]?.[route.method.toLowerCase()];
  return operation?.requestBody?.content['multipart/form-data'] !== undefined;
}

/**
 * Multipart uploads with the bad text in the file's name, in the metadata field, in its JSON, and as
 * a part's name; a lone surrogate as its CESU-8 bytes.
 */
function multipartVariants(text: string): { type: string; body: Buffer }[] {
  const part = (disposition: string, value: string) =>
    `--x\r\nContent-Disposition: form-data; ${disposition}\r\n\r\n${value}\r\n`;
  const file = (name: string) => part(`name="file"; filename="${name}"`, 'Some text.');
  const bodies = [
    file(`${text}.txt`),
    file('notes.txt') + part('name="metadata"', text),
    file('notes.txt') + part('name="metadata"', JSON.stringify({ title: text })),
    file('notes.txt') + part(`name="${text}"`, 'x'),
  ];
  const cesu = Buffer.from([0xed, 0xa0, 0x80]);
  return bodies.map((body) => {
    const pieces = `${body}--x--\r\n`.split('\ud800').map((piece) => Buffer.from(piece));
    const bytes = Buffer.concat(pieces.flatMap((piece, i) => (i === 0 ? [piece] : [cesu, piece])));
    return { type: 'multipart/form-data; boundary=x', body: bytes };
  });
}

/** An example of a schema: its example, else a value of its type. */
function sample(
  schema: Schema,
  components: Record<string, Schema>,
  ids: Record<string, string>,
  name = '',
): unknown {
  if (schema.$ref) return sample(components[schema.$ref.split('/').pop()!], components, ids, name);
  if (schema.allOf?.length) return sample(schema.allOf[0], components, ids, name);
  if (name in ids) return ids[name];
  if (schema.example !== undefined) return schema.example;
  if (schema.enum?.length) return schema.enum[0];
  switch (schema.type ?? 'string') {
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([key, child]) => [
          key,
          sample(child, components, ids, key),
        ]),
      );
    case 'array':
      return [sample(schema.items ?? { type: 'string' }, components, ids)];
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    default:
      return 'text';
  }
}

/** The body a route documents (or, for the authorization server's, one of its fields), as an object. */
function bodyFor(openApi: OpenApi, route: ListedRoute, ids: Record<string, string>): Record<string, unknown> {
  const name = `${route.method} ${route.path}`;
  const undocumented = UNDOCUMENTED_FIELDS[name];
  if (undocumented) return Object.fromEntries(undocumented.map((field) => [field, ids[field] ?? 'text']));
  const operation = openApi.paths[route.path.replace(/:([a-z_]+)/g, '{$1}')]?.[route.method.toLowerCase()];
  const schema = operation?.requestBody?.content['application/json']?.schema;
  if (!schema) return { text: 'text' };
  return sample(schema, openApi.components.schemas, ids) as Record<string, unknown>;
}

function documentedQuery(openApi: OpenApi, route: ListedRoute): string[] {
  const operation = openApi.paths[route.path.replace(/:([a-z_]+)/g, '{$1}')]?.[route.method.toLowerCase()] as
    { parameters?: { in: string; name: string }[] } | undefined;
  return (operation?.parameters ?? [])
    .filter((parameter) => parameter.in === 'query')
    .map((parameter) => parameter.name);
}

/** The body once for each string in it (at any depth), that string replaced by `text`; and a key too. */
function stringVariants(value: Record<string, unknown>, text: string): Record<string, unknown>[] {
  const variants: Record<string, unknown>[] = [];
  const walk = (node: unknown, replace: (next: unknown) => unknown): void => {
    if (typeof node === 'string') variants.push(replace(text) as Record<string, unknown>);
    else if (Array.isArray(node))
      node.forEach((child, i) => walk(child, (next) => replace(node.map((c, j) => (j === i ? next : c)))));
    else if (node && typeof node === 'object') {
      for (const [key, child] of Object.entries(node))
        walk(child, (next) => replace({ ...node, [key]: next }));
    }
  };
  walk(value, (next) => next);
  variants.push({ ...value, [`key${text}`]: 'x' });
  return variants;
}

/** An error a client can read: a 4xx (or a page, a redirect, a success), with a body that says what. */
function acceptable(answer: Answer): boolean {
  if (answer.status >= 500) return false;
  if (answer.status < 400) return true;
  const type = answer.headers.get('content-type') ?? '';
  if (type.startsWith('text/html')) return true;
  try {
    const body = JSON.parse(answer.body) as { error?: unknown };
    return typeof body.error === 'string' || typeof body.error === 'object';
  } catch {
    return false;
  }
}

/** Refused as the client's fault: a 4xx with an error body, or a JSON-RPC error (MCP answers 200). */
function refused(answer: Answer): boolean {
  if (answer.status >= 400 && answer.status < 500) return acceptable(answer);
  try {
    const code = (JSON.parse(answer.body) as { error?: { code?: number } }).error?.code;
    return code !== undefined && code <= -32600 && code >= -32700;
  } catch {
    return false;
  }
}

function summary(answer: Answer): string {
  return `${answer.route} [${answer.sent}] -> ${answer.status} ${answer.body.slice(0, 160)}`;
}

async function inParallel<T>(
  items: T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}
