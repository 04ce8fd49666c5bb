import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from 'src/modules/auth/auth.decorators.js';
import { HealthService } from 'src/modules/health/health.service.js';

@ApiTags('health')
@Controller()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get('health')
  @Public()
  @ApiOperation({ summary: 'Liveness: the process is up' })
  @ApiOkResponse({ schema: { type: 'object', properties: { status: { type: 'string', example: 'ok' } } } })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @Public()
  @ApiOperation({ summary: 'Readiness: PostgreSQL and Redis answer' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      example: {
        status: 'ready',
        checks: { postgres: { status: 'ok' }, redis: { status: 'ok' } },
        search: { mode: 'hybrid', provider: 'local', model: 'Xenova/bge-small-en-v1.5', dimensions: 384 },
      },
    },
  })
  @ApiServiceUnavailableResponse({
    description: 'A dependency does not answer',
    schema: {
      type: 'object',
      example: {
        error: 'Not ready',
        code: 'not_ready',
        details: {
          checks: { postgres: { status: 'ok' }, redis: { status: 'error' } },
          search: { mode: 'hybrid', provider: 'local', model: 'Xenova/bge-small-en-v1.5', dimensions: 384 },
        },
      },
    },
  })
  async ready(@Res({ passthrough: true }) response: Response) {
    const readiness = await this.health.readiness();
    if (readiness.ready) return { status: 'ready', checks: readiness.checks, search: readiness.search };
    response.status(503);
    return {
      error: 'Not ready',
      code: 'not_ready',
      details: { checks: readiness.checks, search: readiness.search },
    };
  }
}
