import { Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import type { Principal, TokenVerifier } from 'src/modules/auth/auth.types.js';

export const OAUTH_TOKEN_PREFIX = 'svc_at_';

/**
 * OAuth 2.1 access tokens (`svc_at_...`) for MCP clients. The authorization server is not built yet, so
 * no token is valid; the tier, its prefix and its rate limit are in place for when it is.
 */
@Injectable()
export class OAuthTokenVerifier implements TokenVerifier {
  readonly prefix = OAUTH_TOKEN_PREFIX;

  verify(_token: string): Promise<Principal> {
    return Promise.reject(CommonErrors.invalidAccessToken());
  }
}
