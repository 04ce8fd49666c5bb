import {
  decoyHash,
  generatePassword,
  hashPassword,
  passwordIssue,
  verifyPassword,
} from 'src/modules/auth/users/passwords.js';

describe('passwords', () => {
  it('verifies the password a hash was made from, and no other', async () => {
    const hash = await hashPassword('correct horse battery staple');
    expect(hash).toMatch(/^\$scrypt\$ln=15,r=8,p=3\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$/);
    await expect(verifyPassword('correct horse battery staple', hash)).resolves.toBe(true);
    await expect(verifyPassword('correct horse battery stapl', hash)).resolves.toBe(false);
  });

  it('salts every hash', async () => {
    expect(await hashPassword('the same password')).not.toBe(await hashPassword('the same password'));
  });

  it('compares passwords in their composed form (NFC)', async () => {
    const hash = await hashPassword('caf\u00e9 au lait please');
    await expect(verifyPassword('cafe\u0301 au lait please', hash)).resolves.toBe(true);
  });

  it('verifies a hash made with other parameters, which it reads from the hash', async () => {
    // ln=10, r=8, p=1 of "an older password", made once with node:crypto.scrypt.
    const { scryptSync } = await import('node:crypto');
    const salt = Buffer.from('0123456789abcdef');
    const key = scryptSync('an older password', salt, 32, { N: 1024, r: 8, p: 1 });
    const stored = `$scrypt$ln=10,r=8,p=1$${salt.toString('base64')}$${key.toString('base64')}`;
    await expect(verifyPassword('an older password', stored)).resolves.toBe(true);
  });

  it.each(['', 'plain', '$scrypt$ln=15,r=8,p=3$abc', '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA'])(
    'matches nothing against a malformed hash %j',
    async (stored) => {
      await expect(verifyPassword('anything at all', stored)).resolves.toBe(false);
    },
  );

  it('has a decoy hash that no password is known for', async () => {
    const decoy = await decoyHash();
    expect(decoy).toBe(await decoyHash());
    await expect(verifyPassword('', decoy)).resolves.toBe(false);
  });

  it('counts length in characters: 12 to 1,024', () => {
    expect(passwordIssue('a'.repeat(11))).toBe('must be 12-1024 characters, got 11');
    expect(passwordIssue('a'.repeat(12))).toBeNull();
    expect(passwordIssue('😀'.repeat(12))).toBeNull(); // 24 UTF-16 units, 12 characters
    expect(passwordIssue('a'.repeat(1025))).toBe('must be 12-1024 characters, got 1025');
  });

  it('generates passwords that pass its own rules and differ', () => {
    const password = generatePassword();
    expect(passwordIssue(password)).toBeNull();
    expect(password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(generatePassword()).not.toBe(password);
  });
});
