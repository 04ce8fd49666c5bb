import { Body, Controller, Get, HttpCode, Inject, Options, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Accepts } from 'src/common/http/request-body.interceptor.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { Public } from 'src/modules/auth/auth.decorators.js';
import { SCOPES } from 'src/modules/auth/auth.types.js';
import { AUTH_METHODS, GRANT_TYPES } from 'src/modules/auth/oauth/clients/client-metadata.js';
import { ClientsService, type RegisteredClient } from 'src/modules/auth/oauth/clients/clients.service.js';
import { OAuthErrors, OAuthExceptionFilter } from 'src/modules/auth/oauth/oauth.errors.js';
import { OAuthParameters } from 'src/modules/auth/oauth/parameters.js';
import { RegistrationThrottle } from 'src/modules/auth/oauth/registration-throttle.js';
import { resourcesOf, serviceBase } from 'src/modules/auth/oauth/resources.js';
import { type TokenResponse, TokensService } from 'src/modules/auth/oauth/tokens.service.js';

const FORM = 'application/x-www-form-urlencoded';

/**
 * Metadata derived from the request's Host (no PUBLIC_BASE_URL) is not for a shared cache to keep and
 * hand to a client that came by another name.
 */
function metadataHeaders(response: Response, config: Pick<CoreConfig, 'publicBaseUrl'>): void {
  allowAnyOrigin(response);
  if (!config.publicBaseUrl) response.set('Cache-Control', 'no-store').vary('Host');
}

/**
 * Browser-based clients call these across origins with no credentials a browser adds by itself
 * (client secrets and tokens travel in the body or the Authorization header), so any origin may.
 */
function allowAnyOrigin(response: Response): void {
  response.set({
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
    'Access-Control-Allow-Headers': 'Authorization, Content-Type, MCP-Protocol-Version',
    'Access-Control-Max-Age': '86400',
  });
}

/**
 * The authorization server's machine endpoints: metadata (RFC 8414, RFC 9728), client registration
 * (RFC 7591), the token endpoint (RFC 6749, PKCE) and revocation (RFC 7009). Errors have OAuth's
 * body `{ error, error_description }`; docs/auth.md walks through the flow.
 */
@ApiExcludeController()
@Controller()
@UseFilters(OAuthExceptionFilter)
export class OAuthController {
  constructor(
    private readonly clients: ClientsService,
    private readonly tokens: TokensService,
    private readonly registrationThrottle: RegistrationThrottle,
    @Inject(CORE_CONFIG) private readonly config: CoreConfig,
  ) {}

  @Get('.well-known/oauth-authorization-server')
  @Public({ limit: 'none' })
  authorizationServerMetadata(@Req() request: Request, @Res({ passthrough: true }) response: Response) {
    metadataHeaders(response, this.config);
    const base = serviceBase(request, this.config);
    return {
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      scopes_supported: SCOPES,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: GRANT_TYPES,
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: AUTH_METHODS,
      revocation_endpoint_auth_methods_supported: AUTH_METHODS,
      authorization_response_iss_parameter_supported: true,
      service_documentation: `${base}/docs`,
    };
  }

  /**
   * Each resource's metadata at its own well-known address (RFC 9728), and the MCP endpoint's at the
   * root one too: clients of MCP's first authorization spec look there.
   */
  @Get([
    '.well-known/oauth-protected-resource',
    '.well-known/oauth-protected-resource/v1',
    '.well-known/oauth-protected-resource/v1/mcp',
  ])
  @Public({ limit: 'none' })
  protectedResourceMetadata(@Req() request: Request, @Res({ passthrough: true }) response: Response) {
    metadataHeaders(response, this.config);
    const base = serviceBase(request, this.config);
    const resources = resourcesOf(base);
    const mcp = !request.path.toLowerCase().replace(/\/+$/, '').endsWith('/v1');
    return {
      resource: mcp ? resources.mcp : resources.api,
      authorization_servers: [base],
      scopes_supported: SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: mcp ? 'Dataset search (MCP)' : 'Dataset search API',
      resource_documentation: `${base}/docs`,
    };
  }

  @Options([
    '.well-known/oauth-authorization-server',
    '.well-known/oauth-protected-resource',
    '.well-known/oauth-protected-resource/v1',
    '.well-known/oauth-protected-resource/v1/mcp',
    'oauth/register',
    'oauth/token',
    'oauth/revoke',
  ])
  @Public({ limit: 'none' })
  @HttpCode(204)
  preflight(@Res({ passthrough: true }) response: Response): void {
    allowAnyOrigin(response);
  }

  /**
   * Swagger UI opened at /docs (no trailing slash) sends its OAuth redirect here rather than to
   * /docs/oauth2-redirect.html, which serves its page: pass the response on, query and all.
   */
  @Get('oauth2-redirect.html')
  @Public({ limit: 'none' })
  swaggerUiRedirect(@Req() request: Request, @Res() response: Response): void {
    const query = request.originalUrl.indexOf('?');
    response.redirect(302, `/docs/oauth2-redirect.html${query < 0 ? '' : request.originalUrl.slice(query)}`);
  }

  @Post('oauth/register')
  @Public()
  @HttpCode(201)
  async register(
    @Body() body: unknown,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<RegisteredClient> {
    allowAnyOrigin(response);
    response.set('Cache-Control', 'no-store');
    await this.registrationThrottle.count(request.ip);
    return this.clients.register(body);
  }

  @Post('oauth/token')
  @Public()
  @HttpCode(200)
  @Accepts(FORM)
  async token(
    @Body() body: Record<string, unknown>,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<TokenResponse> {
    allowAnyOrigin(response);
    response.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
    const params = new OAuthParameters(body);
    // What the request is comes first: an empty one is invalid_request, whoever sent it.
    const grantType = params.required('grant_type');
    const client = await this.clients.authenticate(request, params);
    switch (grantType) {
      case 'authorization_code':
        return this.tokens.exchangeCode(client, {
          code: params.required('code'),
          codeVerifier: params.required('code_verifier'),
          redirectUri: params.optional('redirect_uri'),
          resource: params.optional('resource'),
        });
      case 'refresh_token':
        return this.tokens.refresh(client, {
          refreshToken: params.required('refresh_token'),
          scope: params.optional('scope'),
          resource: params.optional('resource'),
        });
      default:
        throw OAuthErrors.unsupportedGrantType(grantType);
    }
  }

  @Post('oauth/revoke')
  @Public()
  @HttpCode(200)
  @Accepts(FORM)
  async revoke(
    @Body() body: Record<string, unknown>,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<Record<string, never>> {
    allowAnyOrigin(response);
    const params = new OAuthParameters(body);
    const token = params.required('token');
    const client = await this.clients.authenticate(request, params);
    // token_type_hint is only a hint (RFC 7009 2.1): the token's prefix says what it is.
    await this.tokens.revoke(client, token);
    return {};
  }
}
