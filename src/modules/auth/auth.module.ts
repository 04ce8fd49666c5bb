import { Module } from '@nestjs/common';
import { GuardsModule } from 'src/modules/auth/guards/guards.module.js';

/**
 * Authentication and authorization: the global guards, and through them the tiers' modules (API keys,
 * sessions, OAuth) and the rate limits.
 */
@Module({ imports: [GuardsModule] })
export class AuthModule {}
