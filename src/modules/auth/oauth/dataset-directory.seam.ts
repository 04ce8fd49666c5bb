import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';

/**
 * The names of an account's datasets, for the OAuth consent page, where a person picks the datasets a
 * grant covers. The datasets module, which owns the table, has one.
 */
export interface DatasetDirectory {
  namesOf(accountId: string): Promise<{ id: string; name: string }[]>;
}

/**
 * The consent page's way to the account's datasets. Features import auth, never the reverse, so the
 * application binds the datasets module's directory here where it composes the two (`AuthModule.bind`
 * in app.module.ts); without one, the application does not start.
 */
@Injectable()
export class DatasetDirectorySeam implements DatasetDirectory, OnApplicationBootstrap {
  private directory: DatasetDirectory | null = null;

  bind(directory: DatasetDirectory): void {
    this.directory = directory;
  }

  onApplicationBootstrap(): void {
    this.bound();
  }

  namesOf(accountId: string): Promise<{ id: string; name: string }[]> {
    return this.bound().namesOf(accountId);
  }

  private bound(): DatasetDirectory {
    if (!this.directory)
      throw new Error('No DatasetDirectory is bound for the consent page (AuthModule.bind)');
    return this.directory;
  }
}
