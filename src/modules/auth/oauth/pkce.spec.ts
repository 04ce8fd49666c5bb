import { CHALLENGE, verifiesChallenge } from 'src/modules/auth/oauth/pkce.js';

// RFC 7636, appendix B.
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const S256_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

describe('verifiesChallenge', () => {
  it("accepts the verifier an S256 challenge was made from (RFC 7636's example)", () => {
    expect(verifiesChallenge(VERIFIER, S256_CHALLENGE)).toBe(true);
  });

  it('refuses any other verifier', () => {
    expect(verifiesChallenge(`${VERIFIER.slice(0, -1)}Y`, S256_CHALLENGE)).toBe(false);
  });

  it('refuses the plain method: the verifier sent as its own challenge', () => {
    expect(verifiesChallenge(VERIFIER, VERIFIER)).toBe(false);
  });

  it.each([
    ['42 characters', 'a'.repeat(42)],
    ['129 characters', 'a'.repeat(129)],
    ['a character outside the unreserved set', `${'a'.repeat(42)}+`],
  ])('refuses a verifier of %s', (_case, verifier) => {
    expect(verifiesChallenge(verifier, S256_CHALLENGE)).toBe(false);
  });

  it('refuses a challenge that is not 43 base64url characters', () => {
    expect(verifiesChallenge(VERIFIER, `${S256_CHALLENGE}=`)).toBe(false);
    expect(verifiesChallenge(VERIFIER, S256_CHALLENGE.replace('-', '+'))).toBe(false);
  });

  it('recognises the form of an S256 challenge, which authorization requests must send', () => {
    expect(CHALLENGE.test(S256_CHALLENGE)).toBe(true);
    expect(CHALLENGE.test(S256_CHALLENGE.slice(1))).toBe(false);
  });
});
