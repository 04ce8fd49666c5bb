/** Jest in native ESM mode (Nest 12 is ESM-only); `npm test` passes --experimental-vm-modules. */
const base = {
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^src/(.*)\\.js$': '<rootDir>/src/$1',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testEnvironment: 'node',
};

export default {
  // Per test; e2e tests boot servers. (A global option: Jest ignores it inside a project.)
  testTimeout: 30_000,
  projects: [{ ...base, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    {
      ...base,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/global-setup.mjs',
      globalTeardown: '<rootDir>/test/global-teardown.mjs',
    },
    {
      // The repositories against the real database, without HTTP or Nest: it needs the migrated template too.
      ...base,
      displayName: 'medium',
      testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'],
      globalSetup: '<rootDir>/test/global-setup.mjs',
      globalTeardown: '<rootDir>/test/global-teardown.mjs',
    },
  ],
};
