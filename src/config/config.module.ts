import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';

/** Makes the configuration loaded at boot injectable everywhere as `@Inject(APP_CONFIG)`. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig) {
    return {
      module: ConfigModule,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
  }
}
