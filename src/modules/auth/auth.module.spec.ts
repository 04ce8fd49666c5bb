import '@nestjs/core';
import type { Request } from 'express';
import { type EarlyStart, EarlyStartSeam } from 'src/modules/auth/guards/early-start.seam.js';
import {
  type DatasetDirectory,
  DatasetDirectorySeam,
} from 'src/modules/auth/oauth/dataset-directory.seam.js';

// @nestjs/throttler is CommonJS, which Jest's ESM runtime loads only once @nestjs/common and
// @nestjs/core have run: the modules that import it come after the static imports.
const { AuthModule } = await import('src/modules/auth/auth.module.js');

class Directory implements DatasetDirectory {
  namesOf(accountId: string) {
    return Promise.resolve([{ id: 'ds_1', name: `of ${accountId}` }]);
  }
}

class Embedding implements EarlyStart {
  start(_request: Request): void {}
}

class Prefetch implements EarlyStart {
  start(_request: Request): void {}
}

describe("AuthModule.bind, which binds auth's seams to the features' providers", () => {
  it('asks for the seams and for the providers it names', () => {
    const provider = AuthModule.bind({ datasetDirectory: Directory, earlyStarts: [Embedding, Prefetch] });
    expect(provider.inject).toEqual([DatasetDirectorySeam, EarlyStartSeam, Directory, Embedding, Prefetch]);
  });

  it('binds the directory for the consent page, and each early work to the type routes name', async () => {
    const provider = AuthModule.bind({ datasetDirectory: Directory, earlyStarts: [Embedding, Prefetch] });
    const [directories, earlyStarts] = [new DatasetDirectorySeam(), new EarlyStartSeam()];
    const [embedding, prefetch] = [new Embedding(), new Prefetch()];
    await provider.useFactory(directories, earlyStarts, new Directory(), embedding, prefetch);
    await expect(directories.namesOf('acc_1')).resolves.toEqual([{ id: 'ds_1', name: 'of acc_1' }]);
    expect(earlyStarts.of(Embedding)).toBe(embedding);
    expect(earlyStarts.of(Prefetch)).toBe(prefetch);
  });
});

describe('DatasetDirectorySeam', () => {
  it('stops the application from starting when no directory is bound', () => {
    expect(() => new DatasetDirectorySeam().onApplicationBootstrap()).toThrow(
      'No DatasetDirectory is bound for the consent page (AuthModule.bind)',
    );
  });
});
