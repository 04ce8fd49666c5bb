import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import { CommonErrors } from 'src/common/errors/app-error.js';
import type { Principal, TokenVerifier } from 'src/modules/auth/auth.types.js';

/** The verifier of each kind of bearer token (GuardsModule lists them). */
export const TOKEN_VERIFIERS = Symbol('TOKEN_VERIFIERS');

/**
 * Reads `Authorization: Bearer <token>` and hands the token to the verifier registered for its prefix.
 * A token with no known prefix is a malformed API key.
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(@Inject(TOKEN_VERIFIERS) private readonly verifiers: TokenVerifier[]) {
    super();
  }

  validate(token: string): Promise<Principal> {
    const verifier = this.verifiers.find((v) => token.startsWith(v.prefix));
    if (!verifier) return Promise.reject(CommonErrors.invalidApiKey());
    return verifier.verify(token);
  }
}
