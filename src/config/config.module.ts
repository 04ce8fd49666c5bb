import { type DynamicModule, Global, Module } from '@nestjs/common';
import type { Composed, Sections } from 'src/config/define.js';

/** Makes each section of the configuration loaded at boot injectable everywhere by its token. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot<S extends Sections>(sections: S, config: Composed<S>): DynamicModule {
    const providers = Object.entries(sections).map(([key, section]) => ({
      provide: section.token,
      useValue: config[key],
    }));
    return { module: ConfigModule, providers, exports: providers.map((provider) => provider.provide) };
  }
}
