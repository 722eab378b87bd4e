import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lib/config.js';

const SECRET = 'a-webhook-secret-of-some-length';

describe('event configuration', () => {
  it('has no destination by default', () => {
    expect(loadConfig({}).events).toEqual({
      webhook: null,
      eventBridge: null,
      attempts: 5,
      backoffMs: 500,
      backoffCapMs: 10_000,
      catchUpMs: 60_000,
    });
  });

  it('reads a webhook and an EventBridge bus', () => {
    const events = loadConfig({
      NARWAL_WEBHOOK_URL: 'https://hooks.example.com/narwal?team=a',
      NARWAL_WEBHOOK_SECRET: SECRET,
      NARWAL_WEBHOOK_TIMEOUT_MS: '2000',
      NARWAL_EVENTBRIDGE_BUS: 'arn:aws:events:eu-west-1:123456789012:event-bus/git',
      AWS_REGION: 'eu-west-1',
      NARWAL_EVENTS_ATTEMPTS: '8',
    }).events;
    expect(events.webhook).toEqual({
      url: 'https://hooks.example.com/narwal?team=a',
      secret: SECRET,
      timeoutMs: 2000,
    });
    expect(events.eventBridge).toEqual({
      bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/git',
      source: 'narwal',
      region: 'eu-west-1',
      endpoint: undefined,
    });
    expect(events.attempts).toBe(8);
  });

  it.each([
    [{ NARWAL_WEBHOOK_URL: 'https://h.example.com/x' }, 'NARWAL_WEBHOOK_SECRET must be set'],
    [{ NARWAL_WEBHOOK_URL: 'https://h.example.com/x', NARWAL_WEBHOOK_SECRET: 'short' }, 'at least'],
    [{ NARWAL_WEBHOOK_URL: 'ftp://h.example.com/x', NARWAL_WEBHOOK_SECRET: SECRET }, 'absolute http(s) URL'],
    [{ NARWAL_WEBHOOK_URL: 'not a url', NARWAL_WEBHOOK_SECRET: SECRET }, 'absolute http(s) URL'],
    [
      { NARWAL_WEBHOOK_URL: 'https://u:p@h.example.com/x', NARWAL_WEBHOOK_SECRET: SECRET },
      'must not carry credentials',
    ],
    [{ NARWAL_EVENTS_ATTEMPTS: '0' }, 'NARWAL_EVENTS_ATTEMPTS must be an integer between 1 and 100'],
    [
      { NARWAL_WEBHOOK_URL: 'http://h/x', NARWAL_WEBHOOK_SECRET: SECRET, NARWAL_WEBHOOK_TIMEOUT_MS: 'soon' },
      'NARWAL_WEBHOOK_TIMEOUT_MS',
    ],
  ])('refuses %j', (env, message) => {
    const load = () => loadConfig(env);
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(message);
  });
});
