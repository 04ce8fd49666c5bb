import { OAuthProtocolError } from 'src/modules/auth/oauth/oauth.errors.js';
import { OAuthParameters } from 'src/modules/auth/oauth/parameters.js';

/** The refusal reading `name` ends with, as OAuth answers it. */
function refusal(params: Record<string, unknown>, read: (p: OAuthParameters) => unknown) {
  try {
    read(new OAuthParameters(params));
  } catch (error) {
    if (error instanceof OAuthProtocolError) return { error: error.error, description: error.description };
    throw error;
  }
  return null;
}

describe('OAuthParameters', () => {
  it('reads a parameter given once as a plain value', () => {
    const params = new OAuthParameters({ grant_type: 'refresh_token', scope: 'search' });
    expect(params.optional('scope')).toBe('search');
    expect(params.required('grant_type')).toBe('refresh_token');
  });

  it('reads an absent or empty parameter as absent, and refuses it where it is required', () => {
    const params = new OAuthParameters({ scope: '' });
    expect(params.optional('scope')).toBeUndefined();
    expect(params.optional('state')).toBeUndefined();
    expect(refusal({ scope: '' }, (p) => p.required('scope'))).toEqual({
      error: 'invalid_request',
      description: 'scope is required',
    });
  });

  it('refuses a parameter given twice as invalid_request, rather than read one of the two', () => {
    expect(refusal({ scope: ['search', 'datasets:write'] }, (p) => p.optional('scope'))).toEqual({
      error: 'invalid_request',
      description: 'scope is given more than once',
    });
  });

  it('refuses a parameter a parser made an object of', () => {
    expect(refusal({ scope: { a: 'search' } }, (p) => p.optional('scope'))).toEqual({
      error: 'invalid_request',
      description: 'scope must be a single plain value',
    });
  });

  it('refuses a bracketed parameter (scope[a]) that a parser kept under its own name', () => {
    expect(refusal({ 'scope[a]': 'search' }, (p) => p.optional('scope'))).toEqual({
      error: 'invalid_request',
      description: 'scope must be a single plain value, not scope[...]',
    });
    expect(refusal({ 'scope[a]': 'search', scope: 'search' }, (p) => p.required('scope'))).not.toBeNull();
  });

  it('leaves other parameters alone when one is malformed', () => {
    expect(new OAuthParameters({ scope: ['a', 'b'], state: 'xyz' }).optional('state')).toBe('xyz');
  });
});
