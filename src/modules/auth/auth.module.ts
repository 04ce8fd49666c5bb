import { type FactoryProvider, Module, type Type } from '@nestjs/common';
import { type EarlyStart, EarlyStartSeam } from 'src/modules/auth/guards/early-start.seam.js';
import { GuardsModule } from 'src/modules/auth/guards/guards.module.js';
import {
  type DatasetDirectory,
  DatasetDirectorySeam,
} from 'src/modules/auth/oauth/dataset-directory.seam.js';
import { OAuthModule } from 'src/modules/auth/oauth/oauth.module.js';

/** What auth needs of the features, which import it: the providers the application binds to its seams. */
export interface AuthBindings {
  /** The account's datasets, for the OAuth consent page. */
  datasetDirectory: Type<DatasetDirectory>;
  /** The work routes declare with `@StartsEarly`, each bound to the type a route names. */
  earlyStarts: Type<EarlyStart>[];
}

const AUTH_BINDINGS = Symbol('AUTH_BINDINGS');

/**
 * Authentication and authorization: the global guards, and through them the tiers' modules (API keys,
 * sessions, OAuth) and the rate limits.
 */
@Module({ imports: [GuardsModule, OAuthModule], exports: [GuardsModule, OAuthModule] })
export class AuthModule {
  /**
   * A provider for the module that imports auth and the features together (the application's): it
   * binds auth's seams to the features' providers when the application is created, since auth imports
   * no feature.
   */
  static bind(bindings: AuthBindings): FactoryProvider<AuthBindings> {
    return {
      provide: AUTH_BINDINGS,
      inject: [DatasetDirectorySeam, EarlyStartSeam, bindings.datasetDirectory, ...bindings.earlyStarts],
      useFactory: (
        directories: DatasetDirectorySeam,
        earlyStarts: EarlyStartSeam,
        directory: DatasetDirectory,
        ...work: EarlyStart[]
      ) => {
        directories.bind(directory);
        bindings.earlyStarts.forEach((type, i) => earlyStarts.bind(type, work[i]));
        return bindings;
      },
    };
  }
}
