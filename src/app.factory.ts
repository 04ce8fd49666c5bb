import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { AppModule } from 'src/app.module.js';
import { AllExceptionsFilter } from 'src/common/filters/all-exceptions.filter.js';
import { InFlightRequests } from 'src/common/http/in-flight-requests.js';
import { httpsRedirect } from 'src/common/http/https-redirect.middleware.js';
import { securityHeaders } from 'src/common/http/security-headers.middleware.js';
import { defaultToEmptyBody, deferBodyErrors } from 'src/common/http/request-body.interceptor.js';
import { PinoNestLogger, requestLogger } from 'src/common/logging/logger.js';
import { refuseMalformedUtf8, rejectAbsurdBodies } from 'src/common/validation/json-body.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { oauthAnswerOf, sendOAuthAnswer } from 'src/modules/auth/oauth/oauth.errors.js';
import {
  isMcpRequest,
  isOAuthPath,
  MCP_SCOPES,
  resourceMetadataUrl,
} from 'src/modules/auth/oauth/resources.js';
import { mcpOriginGate } from 'src/modules/mcp/mcp-origins.js';
import { setUpOpenApi } from 'src/openapi/openapi.document.js';
import type { Configuration } from 'src/configuration.js';

/** The largest body `/oauth/register` reads. */
const OAUTH_JSON_LIMIT_BYTES = 64 * 1024;

/** Builds the HTTP application: the module graph plus everything that applies to every request. */
export async function createApp(config: Configuration, logger: Logger): Promise<NestExpressApplication> {
  const { core } = config;
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, logger), {
    bodyParser: false,
    // The JSON parser keeps the bytes it read, for `refuseMalformedUtf8`, which then lets them go.
    rawBody: true,
    // At shutdown, once the requests under way are answered or their grace time is up (see
    // InFlightRequests), kept-alive and still-busy connections are closed rather than waited for.
    forceCloseConnections: true,
    logger: new PinoNestLogger(logger),
    httpsOptions: core.tls
      ? { cert: readFileSync(core.tls.certFile), key: readFileSync(core.tls.keyFile) }
      : undefined,
  });
  app.set('trust proxy', core.trustProxy);
  app.disable('x-powered-by');
  app.use(requestLogger(logger));
  app.use(securityHeaders({ httpsOnly: core.forceHttps || core.tls !== null }));
  // Shutdown waits for the requests under way, and refuses new ones, before the pools close.
  const inFlight = app.get(InFlightRequests);
  app.use(inFlight.middleware);
  // Before credentials and bodies are read: the MCP endpoints' DNS-rebinding defence and CORS.
  app.use(mcpOriginGate({ publicBaseUrl: core.publicBaseUrl, mcpOrigins: config.mcp.origins }));
  app.useGlobalInterceptors(inFlight);
  // The plain listener of HTTP_REDIRECT_PORT (see main.ts) serves this app too, and redirects all but probes.
  if (core.forceHttps || core.tls?.httpRedirectPort) {
    app.use(httpsRedirect({ publicBaseUrl: core.publicBaseUrl, httpsPort: core.tls ? core.port : null }));
  }
  // Bodies over the limit are refused without being buffered (the parser reads the rest and drops it
  // before the 413, so that the connection stays usable). Any JSON
  // value is parsed (`strict` off), so that `null` or `5` is told it is not an object, as `[]` is,
  // rather than that it is not JSON.
  // The authorization server's JSON (client registrations) is small: a registration holds a few URLs.
  app.useBodyParser('json', {
    limit: OAUTH_JSON_LIMIT_BYTES,
    strict: false,
    type: (request: IncomingMessage) =>
      isOAuthPath(request.url ?? '/') &&
      request.headers['content-type']?.split(';')[0].trim().toLowerCase() === 'application/json',
  });
  app.useBodyParser('json', { limit: config.http.jsonBodyLimitBytes, strict: false });
  // The OAuth endpoints and the sign-in and consent forms take HTML forms; routes declare what they
  // accept (`@Accepts`), so no other route sees a form body.
  app.useBodyParser('urlencoded', { extended: false, limit: 64 * 1024 });
  app.use(refuseMalformedUtf8);
  app.use(rejectAbsurdBodies);
  app.use(deferBodyErrors);
  app.use(defaultToEmptyBody);
  app.useGlobalFilters(
    new AllExceptionsFilter(logger, {
      resourceOf: (request) => ({
        metadataUrl: resourceMetadataUrl(request, core),
        scopes: isMcpRequest(request) ? MCP_SCOPES : null,
      }),
      protocolAnswer: (request) =>
        isOAuthPath(request.path)
          ? (response, error) => sendOAuthAnswer(response, oauthAnswerOf(error, request.path))
          : null,
    }),
  );
  app.useGlobalPipes(new AppValidationPipe());
  setUpOpenApi(app, { publicBaseUrl: core.publicBaseUrl, secureCookie: config.sessions.secureCookie });
  app.enableShutdownHooks();
  return app;
}
