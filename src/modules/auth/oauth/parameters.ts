import { OAuthErrors } from 'src/modules/auth/oauth/oauth.errors.js';

/**
 * The parameters of an OAuth request (a form body, or the authorization request's query), each read
 * once and as a plain value: one given twice (RFC 6749 3.1), or in a bracketed form such as
 * `scope[a]=search` that some parsers read as an object, is `invalid_request` rather than absent,
 * since read as absent a second `scope` could widen a request.
 */
export class OAuthParameters {
  constructor(private readonly params: Record<string, unknown>) {}

  /** The value of `name`, or undefined when it is absent or empty. */
  optional(name: string): string | undefined {
    const value = this.params[name];
    if (Array.isArray(value)) throw OAuthErrors.invalidRequest(`${name} is given more than once`);
    if (value !== undefined && typeof value !== 'string') {
      throw OAuthErrors.invalidRequest(`${name} must be a single plain value`);
    }
    if (Object.keys(this.params).some((key) => key.startsWith(`${name}[`))) {
      throw OAuthErrors.invalidRequest(`${name} must be a single plain value, not ${name}[...]`);
    }
    return value === '' ? undefined : value;
  }

  required(name: string): string {
    const value = this.optional(name);
    if (value === undefined) throw OAuthErrors.invalidRequest(`${name} is required`);
    return value;
  }
}
