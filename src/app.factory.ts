import { readFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { Logger } from 'pino';
import { AppModule } from 'src/app.module.js';
import { AllExceptionsFilter } from 'src/common/filters/all-exceptions.filter.js';
import { InFlightRequests } from 'src/common/http/in-flight-requests.js';
import { describeRateLimitedResponses } from 'src/common/http/api-errors.decorator.js';
import { httpsRedirect } from 'src/common/http/https-redirect.middleware.js';
import { securityHeaders } from 'src/common/http/security-headers.middleware.js';
import { deferBodyErrors } from 'src/common/http/request-body.interceptor.js';
import { PinoNestLogger, requestLogger } from 'src/common/logging/logger.js';
import { refuseMalformedUtf8, rejectAbsurdBodies } from 'src/common/validation/json-body.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import type { AppConfig } from 'src/config/app-config.js';
import { SWAGGER_UI_CLIENT_ID } from 'src/modules/auth/oauth/authorization.service.js';
import { isMcpRequest, MCP_SCOPES, resourceMetadataUrl } from 'src/modules/auth/oauth/resources.js';
import { SCOPE_DESCRIPTIONS } from 'src/modules/auth/oauth/pages.js';
import { sessionCookieName } from 'src/modules/auth/sessions/session-cookie.js';
import { mcpOriginGate } from 'src/modules/mcp/mcp-origins.js';

/** Builds the HTTP application: the module graph plus everything that applies to every request. */
export async function createApp(config: AppConfig, logger: Logger): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, logger), {
    bodyParser: false,
    // The JSON parser keeps the bytes it read, for `refuseMalformedUtf8`, which then lets them go.
    rawBody: true,
    // At shutdown, once the requests under way are answered or their grace time is up (see
    // InFlightRequests), kept-alive and still-busy connections are closed rather than waited for.
    forceCloseConnections: true,
    logger: new PinoNestLogger(logger),
    httpsOptions: config.tls
      ? { cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) }
      : undefined,
  });
  app.set('trust proxy', config.trustProxy);
  app.disable('x-powered-by');
  app.use(requestLogger(logger));
  app.use(securityHeaders({ httpsOnly: config.forceHttps || config.tls !== null }));
  // Shutdown waits for the requests under way, and refuses new ones, before the pools close.
  const inFlight = app.get(InFlightRequests);
  app.use(inFlight.middleware);
  // Before credentials and bodies are read: the MCP endpoints' DNS-rebinding defence and CORS.
  app.use(mcpOriginGate(config));
  app.useGlobalInterceptors(inFlight);
  // The plain listener of HTTP_REDIRECT_PORT (see main.ts) serves this app too, and redirects all but probes.
  if (config.forceHttps || config.tls?.httpRedirectPort) {
    app.use(
      httpsRedirect({ publicBaseUrl: config.publicBaseUrl, httpsPort: config.tls ? config.port : null }),
    );
  }
  // Bodies over the limit are refused without being buffered (the parser reads the rest and drops it
  // before the 413, so that the connection stays usable). Any JSON
  // value is parsed (`strict` off), so that `null` or `5` is told it is not an object, as `[]` is,
  // rather than that it is not JSON.
  app.useBodyParser('json', { limit: config.jsonBodyLimitBytes, strict: false });
  // The OAuth endpoints and the sign-in and consent forms take HTML forms; routes declare what they
  // accept (`@Accepts`), so no other route sees a form body.
  app.useBodyParser('urlencoded', { extended: false, limit: 64 * 1024 });
  app.use(refuseMalformedUtf8);
  app.use(rejectAbsurdBodies);
  app.use(deferBodyErrors);
  app.useGlobalFilters(
    new AllExceptionsFilter(logger, (request) => ({
      metadataUrl: resourceMetadataUrl(request, config),
      scopes: isMcpRequest(request) ? MCP_SCOPES : null,
    })),
  );
  app.useGlobalPipes(new AppValidationPipe());
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app, config), {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
    // "Authorize" with OAuth2 signs in as Swagger UI's own public client, with PKCE, for this
    // service's API (the resource, RFC 8707), which only the page knows the address of. This runs
    // after Swagger UI's own onload handler, which creates `window.ui`.
    customJsStr: `window.addEventListener('load', () => window.ui.initOAuth({
      clientId: '${SWAGGER_UI_CLIENT_ID}',
      usePkceWithAuthorizationCodeGrant: true,
      additionalQueryStringParams: { resource: window.location.origin + '/v1' },
    }));`,
  });
  app.enableShutdownHooks();
  return app;
}

export function buildOpenApiDocument(app: NestExpressApplication, config: AppConfig): OpenAPIObject {
  const document = new DocumentBuilder()
    .setTitle('Dataset and Document Search Service')
    .setDescription(
      'Datasets of documents that are extracted, chunked, embedded and indexed in the background, and searched ' +
        'with hybrid BM25 + vector retrieval. Errors have the body `{ error, code, details? }` (plus `retry_after` on ' +
        '429). Every rate-limited response carries X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset.',
    )
    .setVersion('1.0')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque',
        description: 'An API key `svc_sk_...` or an OAuth access token `svc_at_...`',
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
      sessionCookieName(config.sessions.secureCookie),
      {
        type: 'apiKey',
        in: 'cookie',
        description: 'The session of a signed-in person (POST /v1/auth/session), for web apps on this origin',
      },
      'session',
    )
    .build();
  return describeRateLimitedResponses(SwaggerModule.createDocument(app, document));
}
