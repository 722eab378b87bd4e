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
      allowPrivate: false,
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

  it.each([
    'http://127.0.0.1:9000/hook',
    'http://127.8.9.10/hook',
    'http://localhost:9000/hook',
    'http://LocalHost./hook',
    'http://hooks.localhost/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.1.2.3/hook',
    'http://172.16.0.1/hook',
    'http://172.31.255.255/hook',
    'http://192.168.1.10/hook',
    'http://100.64.0.1/hook',
    'http://0.0.0.0/hook',
    'http://[::1]/hook',
    'http://[::]/hook',
    'http://[fe80::1]/hook',
    'http://[fd00::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:a9fe:a9fe]/hook',
    'http://2130706433/hook',
    'http://0x7f.1/hook',
    'http://017700000001/hook',
  ])('refuses a webhook at a loopback, link-local or private address (%s) unless allowed', (url) => {
    const env = { NARWAL_WEBHOOK_URL: url, NARWAL_WEBHOOK_SECRET: SECRET };
    const load = () => loadConfig(env);
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(
      /^NARWAL_WEBHOOK_URL points at a loopback, link-local or private address \(.+\); set NARWAL_WEBHOOK_ALLOW_PRIVATE=true to allow it$/,
    );
    expect(loadConfig({ ...env, NARWAL_WEBHOOK_ALLOW_PRIVATE: 'true' }).events.webhook).toMatchObject({
      allowPrivate: true,
    });
  });

  it.each([
    'https://hooks.example.com/x',
    'http://8.8.8.8/x',
    'http://172.32.0.1/x',
    'http://[2001:db8::1]/x',
  ])('takes a webhook at a public name or address (%s)', (url) => {
    expect(
      loadConfig({ NARWAL_WEBHOOK_URL: url, NARWAL_WEBHOOK_SECRET: SECRET }).events.webhook,
    ).toMatchObject({
      allowPrivate: false,
    });
  });
});
