import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import type { CoreConfig } from 'src/config/core.config.js';
import type { SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';
import { SWAGGER_UI_CLIENT_ID } from 'src/modules/auth/oauth/clients/client-metadata.js';
import { serviceBase } from 'src/modules/auth/oauth/resources.js';
import { SCOPE_DESCRIPTIONS } from 'src/modules/auth/oauth/pages.js';
import { sessionCookieName } from 'src/modules/auth/sessions/session-cookie.js';
import { ErrorResponseDto } from 'src/common/http/api-errors.decorator.js';
import { describeResponses } from 'src/openapi/responses.js';

/**
 * The terms the API is offered under, which `info.license` must name: the package's own
 * (`"license": "UNLICENSED"` in package.json, i.e. not licensed for use by others).
 */
const LICENSE = { name: 'Proprietary' };

/**
 * Serves Swagger UI at /docs and the document at /docs/openapi.json and /docs/openapi.yaml. Its
 * `servers` entry is `PUBLIC_BASE_URL`, or else the origin the document was fetched from, so that a
 * generated client and "Try it out" have a base URL that works from where the reader stands.
 */
export function setUpOpenApi(app: NestExpressApplication, config: OpenApiSettings): void {
  if (!config.publicBaseUrl) {
    // The document names the Host it was asked by: no cache may hand it to a client that used another.
    app.use('/docs', (_request: Request, response: Response, next: NextFunction) => {
      response.set('Cache-Control', 'no-store').vary('Host');
      next();
    });
  }
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app, config), {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
    patchDocumentOnRequest: <TRequest>(request: TRequest, _response: unknown, document: OpenAPIObject) => ({
      ...document,
      servers: [{ url: originOf(request as Request, config), description: 'This service' }],
    }),
    // "Authorize" with OAuth2 signs in as Swagger UI's own public client, with PKCE, for this
    // service's API (the resource, RFC 8707), which only the page knows the address of. This runs
    // after Swagger UI's own onload handler, which creates `window.ui`.
    customJsStr: `window.addEventListener('load', () => window.ui.initOAuth({
      clientId: '${SWAGGER_UI_CLIENT_ID}',
      usePkceWithAuthorizationCodeGrant: true,
      additionalQueryStringParams: { resource: window.location.origin + '/v1' },
    }));`,
  });
}

/** Where the document says the service is, and the name of its session cookie. */
export type OpenApiSettings = Pick<CoreConfig, 'publicBaseUrl'> & Pick<SessionsConfig, 'secureCookie'>;

/** The service's base URL, or `/` (the document's own origin) for a Host header that is not a host. */
function originOf(request: Request, config: OpenApiSettings): string {
  try {
    return serviceBase(request, config);
  } catch {
    return '/';
  }
}

export function buildOpenApiDocument(app: NestExpressApplication, config: OpenApiSettings): OpenAPIObject {
  const document = new DocumentBuilder()
    .setTitle('Dataset and Document Search Service')
    .setDescription(
      'Datasets of documents that are extracted, chunked, embedded and indexed in the background, and searched ' +
        'with hybrid BM25 + vector retrieval. Errors have the body `{ error, code, details? }` (plus `retry_after` on ' +
        '429); `code` is one of the `ErrorCode` enum. Every response of an API route carries X-Request-Id, and ' +
        'X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (but for 503 `shutting_down`); the success responses and the error ranges (`4XX`, `5XX`) list them. Any path may also ' +
        'answer 405 `method_not_allowed` (with `Allow`), 408 `request_timeout` and 431 `headers_too_large`.\n\n' +
        '**To try it here:** get an API key with `node dist/cli.js api-keys create --account my-team` on the server ' +
        '(or sign in with OAuth2), press **Authorize** and paste it under `bearer`. Then create a dataset ' +
        '(`createDataset`), add a document to it (`createDocument`, or `uploadDocument` for a file) with the `id` ' +
        'it returned, and search it (`searchDataset`) with that id as `dataset_id`.',
    )
    .setVersion('1.0')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque',
        description:
          'An API key `svc_sk_...` or an OAuth access token `svc_at_...`. An operator makes API keys on the ' +
          'server: `node dist/cli.js api-keys create --account <name>` prints one (README, Command line).',
      },
      'bearer',
    )
    .addOAuth2(
      {
        type: 'oauth2',
        description:
          'OAuth 2.1 authorization code with PKCE (S256); tokens are `svc_at_...`. Clients register themselves ' +
          'at /oauth/register (RFC 7591); Swagger UI has its own client. See /.well-known/oauth-authorization-server.',
        flows: {
          authorizationCode: {
            authorizationUrl: '/oauth/authorize',
            tokenUrl: '/oauth/token',
            refreshUrl: '/oauth/token',
            scopes: SCOPE_DESCRIPTIONS,
          },
        },
      },
      'oauth2',
    )
    .addCookieAuth(
      sessionCookieName(config.secureCookie),
      {
        type: 'apiKey',
        in: 'cookie',
        description: 'The session of a signed-in person (POST /v1/auth/session), for web apps on this origin',
      },
      'session',
    )
    .build();
  document.info.license = LICENSE;
  return describePathParameters(
    describeResponses(SwaggerModule.createDocument(app, document, { extraModels: [ErrorResponseDto] })),
  );
}

/** Where a path's ids come from: no example value, which Swagger UI would send as it stands. */
const PATH_PARAMETERS: Record<string, string> = {
  dataset_id: 'The `id` createDataset or listDatasets returned (`ds_...`)',
  document_id: 'The `document_id` createDocument or listDocuments returned (`doc_...`)',
  webhook_id: 'The `id` createWebhook or listWebhooks returned (`wh_...`)',
  delivery_id: 'The `id` listWebhookDeliveries returned (`dlv_...`)',
};

function describePathParameters(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const operation of [item.get, item.post, item.patch, item.put, item.delete]) {
      for (const parameter of operation?.parameters ?? []) {
        if ('in' in parameter && parameter.in === 'path' && PATH_PARAMETERS[parameter.name]) {
          parameter.description ??= PATH_PARAMETERS[parameter.name];
        }
      }
    }
  }
  return document;
}
