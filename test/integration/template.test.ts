/**
 * The deployment as CloudFormation: `npm run package` (osls, offline, placeholder credentials)
 * and then the resources and their wiring, read from the template it writes.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEPLOYED_AUTHORIZER, DEPLOYED_GATEWAY_RESPONSES } from '../helpers/aws/deployment.js';
import { validateTemplate } from '../helpers/cfnSchema.js';

const root = resolve(import.meta.dirname, '../..');
type Json = Record<string, unknown>;
let template: {
  Resources: Record<string, { Type: string; Properties: Json; DependsOn?: string[] }>;
  Outputs: Json;
};

type Template = typeof template;

/** Packages serverless.yml anew (with `args`, into a directory of its own) and reads the template. */
async function packaged(args: string[] = []): Promise<Template> {
  const dir = await mkdtemp(join(tmpdir(), 'narwal-package-'));
  await promisify(execFile)(process.execPath, ['scripts/package.mjs', '--package', dir, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(await readFile(join(dir, 'cloudformation-template-update-stack.json'), 'utf8'));
}

/** Evaluates a condition of the template (Fn::Not, Fn::Or and Fn::Equals of literals). */
function condition(t: Template & { Conditions?: Json }, name: string): boolean {
  const evaluate = (node: unknown): unknown => {
    if (typeof node !== 'object' || node === null) return node;
    const [op, args] = Object.entries(node)[0] ?? [];
    const values = (args as unknown[]).map(evaluate);
    if (op === 'Fn::Not') return !values[0];
    if (op === 'Fn::Or') return values.some(Boolean);
    if (op === 'Fn::Equals') return values[0] === values[1];
    throw new Error(`cannot evaluate ${op}`);
  };
  return evaluate(t.Conditions?.[name]) as boolean;
}

beforeAll(async () => {
  // Packaged anew, so the template is always the one serverless.yml describes now.
  template = await packaged();
}, 180_000);

/** The template with every Fn::If decided by its condition (Fn::Not, Fn::Or, Fn::Equals of literals). */
function resolved(t: Template): Template {
  const decide = (node: unknown): unknown => {
    if (Array.isArray(node))
      return node
        .map(decide)
        .filter((n) => !(typeof n === 'object' && n !== null && 'Ref' in n && n.Ref === 'AWS::NoValue'));
    if (typeof node !== 'object' || node === null) return node;
    const entries = Object.entries(node);
    if (entries.length === 1 && entries[0]?.[0] === 'Fn::If') {
      const [name, yes, no] = entries[0][1] as [string, unknown, unknown];
      return decide(condition(t, name) ? yes : no);
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, decide(v)]));
  };
  const resources = Object.entries(t.Resources).filter(([, r]) => {
    const name = (r as { Condition?: string }).Condition;
    return name === undefined || condition(t, name);
  });
  return { ...t, Resources: Object.fromEntries(resources.map(([id, r]) => [id, decide(r)])) } as Template;
}

const resource = (id: string) => {
  const found = template.Resources[id];
  if (!found) throw new Error(`no resource ${id}`);
  return found;
};
const ofType = (type: string) => Object.entries(template.Resources).filter(([, r]) => r.Type === type);
const getAtt = (id: string, attribute: string) => ({ 'Fn::GetAtt': [id, attribute] });
const ref = (id: string) => ({ Ref: id });
/** A CloudFormation Fn::Sub placeholder, e.g. cfn('AWS::Region') for the region. */
const cfn = (name: string) => `\${${name}}`;
const text = (value: unknown) => JSON.stringify(value);

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

const ROLES = ['IamRoleLambdaExecution', 'PoolRole', 'MaintenanceRole'];

/** The statements of one role's inline policies. */
function roleStatements(id: string): Statement[] {
  return (resource(id).Properties.Policies as { PolicyDocument: { Statement: Statement[] } }[]).flatMap(
    (p) => p.PolicyDocument.Statement,
  );
}

function statements(): Statement[] {
  return ROLES.flatMap(roleStatements);
}

const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('the packaged CloudFormation template', () => {
  it('is valid against AWS’s resource schemas: types, properties, required ones, values, references', async () => {
    expect(await validateTemplate(template)).toEqual([]);
  });

  it('has the functions, from the container image, each with its handler', () => {
    const functions = Object.fromEntries(
      ofType('AWS::Lambda::Function').map(([id, r]) => [
        id,
        r.Properties as Json & { ImageConfig: { Command: string[] } },
      ]),
    );
    expect(Object.keys(functions).sort()).toEqual([
      'AuthorizerLambdaFunction',
      'GitLambdaFunction',
      'MaintenanceLambdaFunction',
      'PrewarmLambdaFunction',
    ]);
    expect(functions.AuthorizerLambdaFunction?.ImageConfig.Command).toEqual(['authorizer.handler']);
    expect(functions.GitLambdaFunction?.ImageConfig.Command).toEqual(['git.handler']);
    expect(functions.PrewarmLambdaFunction?.ImageConfig.Command).toEqual(['prewarm.handler']);
    expect(functions.MaintenanceLambdaFunction?.ImageConfig.Command).toEqual(['maintenance.handler']);
    for (const fn of Object.values(functions)) {
      expect(fn.PackageType).toBe('Image');
      expect(text(fn.Code)).toMatch(/dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com\/narwal@sha256:[0-9a-f]{64}/);
    }
  });

  it('scopes every data statement of the roles to the bucket, the table, the file system or the prewarm function', () => {
    const all = statements();
    for (const s of all.filter((s) => actions(s).some((a) => a.startsWith('s3:')))) {
      expect(text(s.Resource)).toMatch(/LogBucket/);
    }
    for (const s of all.filter((s) => actions(s).some((a) => a.startsWith('dynamodb:')))) {
      expect(s.Resource).toEqual(getAtt('PresenceTable', 'Arn'));
      expect(actions(s).sort()).toEqual(
        [
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ].sort(),
      );
    }
    const objectStatements = all.filter((s) => actions(s).includes('s3:GetObject'));
    expect(objectStatements.map((s) => s.Resource)).toEqual(
      ROLES.map(() => ({ 'Fn::Sub': `${cfn('LogBucket.Arn')}/*` })),
    );
    const invoke = all.filter((s) => actions(s).includes('lambda:InvokeFunction'));
    expect(text(invoke.map((s) => s.Resource))).toContain(
      `:function:${resource('PrewarmLambdaFunction').Properties.FunctionName}`,
    );
    for (const s of all.filter((s) => actions(s).some((a) => a.startsWith('elasticfilesystem:')))) {
      expect(text(s.Resource)).toMatch(/CacheFileSystem|CacheAccessPoint/);
    }
    // Nothing but logging and the registry login (which has no resource) is unscoped.
    const unscoped = all.filter((s) => text(s.Resource).includes('"*"') || s.Resource === '*');
    expect(unscoped.flatMap(actions)).toEqual(['ecr:GetAuthorizationToken']);
    expect(all.flatMap(actions).filter((a) => a.endsWith(':*'))).toEqual([]);
  });

  it('mounts the shared cache through the access point in the VPC, once the mount targets exist', () => {
    // The authorizer reads the store and the presence table only.
    expect(resource('AuthorizerLambdaFunction').Properties.FileSystemConfigs).toBeUndefined();
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      if (id === 'AuthorizerLambdaFunction') continue;
      expect(fn.Properties.FileSystemConfigs).toEqual([
        { Arn: getAtt('CacheAccessPoint', 'Arn'), LocalMountPath: '/mnt/narwal' },
      ]);
      expect(fn.Properties.VpcConfig).toEqual({
        SecurityGroupIds: [ref('FunctionSecurityGroup')],
        SubnetIds: [ref('PrivateSubnetA'), ref('PrivateSubnetB')],
      });
      expect(fn.DependsOn, id).toEqual(expect.arrayContaining(['CacheMountTargetA', 'CacheMountTargetB']));
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env).toMatchObject({
        NARWAL_STORE: 's3',
        NARWAL_S3_BUCKET: ref('LogBucket'),
        NARWAL_PRESENCE: 'dynamodb',
        NARWAL_PRESENCE_TABLE: ref('PresenceTable'),
        NARWAL_CACHE_DIR: '/mnt/narwal/cache',
      });
    }
    const mounts = ofType('AWS::EFS::MountTarget').map(([, r]) => r.Properties);
    expect(mounts.map((m) => m.SubnetId)).toEqual([ref('PrivateSubnetA'), ref('PrivateSubnetB')]);
    const point = resource('CacheAccessPoint').Properties as {
      PosixUser: Json;
      RootDirectory: { Path: string };
    };
    expect(point.PosixUser).toEqual({ Uid: '1000', Gid: '1000' });
    expect(point.RootDirectory.Path).toBe('/narwal');
    const nfs = (resource('CacheSecurityGroup').Properties.SecurityGroupIngress as Json[]).map((r) => [
      r.FromPort,
      r.SourceSecurityGroupId,
    ]);
    expect(nfs).toEqual([
      [2049, ref('FunctionSecurityGroup')],
      [2049, ref('PoolSecurityGroup')],
    ]);
  });

  it('reaches S3 and DynamoDB through gateway endpoints, Lambda, EventBridge and Secrets Manager through interface ones', () => {
    const endpoints = ofType('AWS::EC2::VPCEndpoint').map(([, r]) => r.Properties as Json);
    const gateway = endpoints.filter((e) => e.VpcEndpointType === 'Gateway');
    expect(gateway.map((e) => text(e.ServiceName)).sort()).toEqual([
      text({ 'Fn::Sub': `com.amazonaws.${cfn('AWS::Region')}.dynamodb` }),
      text({ 'Fn::Sub': `com.amazonaws.${cfn('AWS::Region')}.s3` }),
    ]);
    for (const e of gateway) expect(e.RouteTableIds).toContainEqual(ref('PrivateRouteTable'));
    expect(
      endpoints
        .filter((e) => e.VpcEndpointType === 'Interface')
        .map((e) => text(e.ServiceName))
        .sort(),
    ).toEqual([
      text({ 'Fn::Sub': `com.amazonaws.${cfn('AWS::Region')}.events` }),
      text({ 'Fn::Sub': `com.amazonaws.${cfn('AWS::Region')}.lambda` }),
      text({ 'Fn::Sub': `com.amazonaws.${cfn('AWS::Region')}.secretsmanager` }),
    ]);
  });

  it('reads the admin token and the webhook key at run time: by their ids, never their values', () => {
    const body = text(template);
    // No secret is resolved into any configuration (CloudFormation would write its value there).
    expect(body).not.toContain('resolve:secretsmanager');
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.NARWAL_ADMIN_TOKEN, id).toBeUndefined();
      expect(env.NARWAL_ADMIN_TOKEN_SECRET_ID, id).toEqual(ref('AdminTokenSecret'));
      expect(env.NARWAL_WEBHOOK_SECRET_ID, id).toEqual({
        'Fn::If': ['HasWebhook', ref('WebhookSecret'), ref('AWS::NoValue')],
      });
    }
    // Every role that runs narwal may read the admin token's secret, and only read it.
    for (const role of ROLES) {
      const reads = roleStatements(role).filter((s) => actions(s).includes('secretsmanager:GetSecretValue'));
      expect(
        reads.map((s) => s.Resource),
        role,
      ).toEqual([ref('AdminTokenSecret')]);
    }
    const data = resource('PoolLaunchTemplate').Properties.LaunchTemplateData as {
      UserData: { 'Fn::Base64': { 'Fn::Sub': [string, Record<string, unknown>] } };
    };
    const [script] = data.UserData['Fn::Base64']['Fn::Sub'];
    expect(script).toContain(`NARWAL_ADMIN_TOKEN_SECRET_ID=${cfn('AdminTokenSecret')}`);
    expect(script).not.toContain('get-secret-value');
  });

  it('sends push events to EventBridge and to a webhook, each only when configured', async () => {
    // EventBridge (the default bus unless told otherwise): an interface endpoint and PutEvents on that bus only.
    expect(condition(template, 'HasEventBus')).toBe(true);
    expect(condition(template, 'HasWebhook')).toBe(false);
    const endpoint = resource('EventsEndpoint') as { Condition?: string; Properties: Json };
    expect(endpoint.Condition).toBe('HasEventBus');
    expect(endpoint.Properties).toMatchObject({
      VpcEndpointType: 'Interface',
      PrivateDnsEnabled: true,
      SubnetIds: [ref('PrivateSubnetA'), ref('PrivateSubnetB')],
      SecurityGroupIds: [ref('EndpointSecurityGroup')],
    });
    const policy = resource('EventsPolicy') as { Condition?: string; Properties: Json };
    expect(policy.Condition).toBe('HasEventBus');
    expect(policy.Properties.Roles).toEqual(ROLES.map(ref));
    expect(policy.Properties.PolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Action: ['events:PutEvents'],
          Resource: {
            'Fn::Sub': `arn:${cfn('AWS::Partition')}:events:${cfn('AWS::Region')}:${cfn('AWS::AccountId')}:event-bus/default`,
          },
        },
      ],
    });
    // The pool's instances resolve the endpoint's private name too, so they may reach it.
    const https = (resource('EndpointSecurityGroup').Properties.SecurityGroupIngress as Json[]).map(
      (r) => r.SourceSecurityGroupId,
    );
    expect(https).toEqual([ref('FunctionSecurityGroup'), ref('PoolSecurityGroup')]);
    // A webhook: a NAT gateway for the private subnets and a generated signing key, all conditional.
    for (const id of [
      'NatAddress',
      'NatGateway',
      'PrivateDefaultRoute',
      'WebhookSecret',
      'WebhookSecretPolicy',
    ]) {
      expect((resource(id) as { Condition?: string }).Condition, id).toBe('HasWebhook');
    }
    expect(resource('PrivateDefaultRoute').Properties).toEqual({
      RouteTableId: ref('PrivateRouteTable'),
      DestinationCidrBlock: '0.0.0.0/0',
      NatGatewayId: ref('NatGateway'),
    });
    expect(resource('NatGateway').Properties.SubnetId).toEqual(ref('PublicSubnetA'));
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.NARWAL_EVENTBRIDGE_BUS, id).toEqual({
        'Fn::If': ['HasEventBus', 'default', ref('AWS::NoValue')],
      });
      expect(text(env.NARWAL_WEBHOOK_SECRET_ID), id).toContain('WebhookSecret');
      expect(text(env.NARWAL_WEBHOOK_SECRET_ID), id).toContain('HasWebhook');
    }
    // Packaged with a webhook and without EventBridge, the conditions turn the other way.
    const other = await packaged([
      '--param=webhookUrl=https://hooks.example.com/narwal',
      '--param=eventBus=none',
    ]);
    expect(condition(other, 'HasEventBus')).toBe(false);
    expect(condition(other, 'HasWebhook')).toBe(true);
    const git = other.Resources.GitLambdaFunction;
    const env = (git?.Properties.Environment as { Variables: Json } | undefined)?.Variables;
    expect(env?.NARWAL_WEBHOOK_URL).toEqual({
      'Fn::If': ['HasWebhook', 'https://hooks.example.com/narwal', ref('AWS::NoValue')],
    });
  }, 120_000);

  it('keeps presence records in a table keyed pk/sk with TTL on ttl', () => {
    const table = resource('PresenceTable').Properties;
    expect(table.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(table.TimeToLiveSpecification).toEqual({ AttributeName: 'ttl', Enabled: true });
    expect(resource('LogBucket').Type).toBe('AWS::S3::Bucket');
  });

  it('serves git through a regional REST API with binary media types and streamed responses', () => {
    const api = resource('ApiGatewayRestApi').Properties;
    expect(api.BinaryMediaTypes).toEqual(['*/*']);
    expect(api.EndpointConfiguration).toEqual({ Types: ['REGIONAL'] });
    const methods = ofType('AWS::ApiGateway::Method').map(
      ([, r]) => r.Properties as { HttpMethod: string; Integration: Json },
    );
    expect(methods).toHaveLength(2);
    for (const method of methods) {
      expect(method.HttpMethod).toBe('ANY');
      expect(method.Integration.Type).toBe('AWS_PROXY');
      expect(method.Integration.ResponseTransferMode).toBe('STREAM');
      expect(method.Integration.TimeoutInMillis).toBe(900000);
      expect(text(method.Integration.Uri)).toContain('/2021-11-15/functions/');
      expect(text(method.Integration.Uri)).toContain('GitLambdaFunction');
      expect(text(method.Integration.Uri)).toContain('/response-streaming-invocations');
    }
  });

  it('keeps the log: versioned, old versions kept 30 days, deletes from it only by the maintenance function', () => {
    const bucket = resource('LogBucket') as unknown as {
      DeletionPolicy: string;
      Properties: Json & { LifecycleConfiguration: { Rules: Json[] } };
    };
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.Properties.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    expect(bucket.Properties.LifecycleConfiguration.Rules).toContainEqual(
      expect.objectContaining({ Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 30 } }),
    );
    const deletes = (id: string) =>
      roleStatements(id)
        .filter((s) => actions(s).some((a) => a === 's3:DeleteObject' || a === 's3:*'))
        .map((s) => s.Resource);
    // Only the sweep deletes from the log; revoking a token deletes its record, outside the log.
    expect(deletes('MaintenanceRole')).toEqual([{ 'Fn::Sub': `${cfn('LogBucket.Arn')}/*` }]);
    for (const id of ['IamRoleLambdaExecution', 'PoolRole'])
      expect(deletes(id), id).toEqual([{ 'Fn::Sub': `${cfn('LogBucket.Arn')}/auth/tokens/*` }]);
    const functions = ofType('AWS::Lambda::Function');
    const withRole = (roleId: string) =>
      functions.filter(([, f]) => text(f.Properties.Role).includes(roleId)).map(([id]) => id);
    expect(withRole('MaintenanceRole')).toEqual(['MaintenanceLambdaFunction']);
    const maintenance = resource('MaintenanceLambdaFunction').Properties;
    // One run at a time, sized for a repack.
    expect(maintenance.ReservedConcurrentExecutions).toBe(1);
    expect(maintenance.MemorySize).toBe(4096);
  });

  it('asks git for credentials through API Gateway: the authorizer on every method, its 401 with WWW-Authenticate', () => {
    const authorizers = ofType('AWS::ApiGateway::Authorizer');
    expect(authorizers).toHaveLength(1);
    const [authorizerId, authorizer] = authorizers[0] as [string, { Properties: Json }];
    // What the stand-in applies in every Lambda-path test (test/helpers/aws/deployment.ts).
    expect(authorizer.Properties.Type).toBe('REQUEST');
    expect(authorizer.Properties.IdentitySource ?? '').toBe(DEPLOYED_AUTHORIZER.identitySources.join(', '));
    expect(authorizer.Properties.AuthorizerResultTtlInSeconds).toBe(DEPLOYED_AUTHORIZER.resultTtlSeconds);
    expect(text(authorizer.Properties.AuthorizerUri)).toContain('AuthorizerLambdaFunction');
    for (const [, method] of ofType('AWS::ApiGateway::Method')) {
      expect(method.Properties.AuthorizationType).toBe('CUSTOM');
      expect(method.Properties.AuthorizerId).toEqual(ref(authorizerId));
    }
    const responses = ofType('AWS::ApiGateway::GatewayResponse');
    expect(Object.fromEntries(responses.map(([, r]) => [r.Properties.ResponseType, r.Properties]))).toEqual(
      Object.fromEntries(
        Object.entries(DEPLOYED_GATEWAY_RESPONSES).map(([type, config]) => [
          type,
          { RestApiId: ref('ApiGatewayRestApi'), ResponseType: type, ...config },
        ]),
      ),
    );
    // A gateway response counts only in a deployment made after it exists.
    for (const [, deployment] of ofType('AWS::ApiGateway::Deployment'))
      expect(deployment.DependsOn).toEqual(expect.arrayContaining(responses.map(([id]) => id)));
    expect(resource('AuthorizerLambdaFunction').Properties.ImageConfig).toEqual({
      Command: ['authorizer.handler'],
    });
  });

  it('routes long transfers from the git function to the pool, and prewarms by invoking the prewarm function', () => {
    const env = (id: string) =>
      (resource(id).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    const git = env('GitLambdaFunction');
    expect(text(git.NARWAL_POOL_URL)).toContain('PoolDistribution.DomainName');
    // 6 MB streams at full speed (Lambda's burst, then 2 MB/s); git's http.postBuffer is 1 MiB.
    expect(git.NARWAL_ROUTE_CLONE_BYTES).toBe('6000000');
    expect(git.NARWAL_ROUTE_PUSH_BYTES).toBe('1048576');
    expect(git.NARWAL_CHUNKED_PUSHES).toBe('pool');
    expect(git.NARWAL_PREWARM).toBe('lambda');
    expect(git.NARWAL_PREWARM_FUNCTION).toBe(resource('PrewarmLambdaFunction').Properties.FunctionName);
    // The other functions prewarm in their own invocation and never redirect.
    for (const id of ['PrewarmLambdaFunction', 'MaintenanceLambdaFunction']) {
      expect(env(id).NARWAL_PREWARM).toBeUndefined();
      expect(env(id).NARWAL_POOL_URL).toBeUndefined();
    }
    const retries = ofType('AWS::Lambda::EventInvokeConfig').map(([, r]) => r.Properties);
    expect(retries).toEqual([expect.objectContaining({ MaximumRetryAttempts: 1 })]);
  });

  it('runs maintenance on a schedule', () => {
    const rules = ofType('AWS::Events::Rule').map(
      ([, r]) => r.Properties as { ScheduleExpression: string; Targets: Json[] },
    );
    expect(rules).toHaveLength(1);
    expect(rules[0]?.ScheduleExpression).toBe('rate(15 minutes)');
    expect(text(rules[0]?.Targets)).toContain('MaintenanceLambdaFunction');
  });

  it('puts the pool behind the ALB: listener -> target group <- Auto Scaling group of t3.small from the launch template', () => {
    const http = resource('PoolHttpListener').Properties;
    expect(http.LoadBalancerArn).toEqual(ref('PoolLoadBalancer'));
    expect(text(http.DefaultActions)).toContain(
      text({ Type: 'forward', TargetGroupArn: ref('PoolTargetGroup') }),
    );
    const group = resource('PoolTargetGroup').Properties;
    expect(group).toMatchObject({
      Port: 8080,
      Protocol: 'HTTP',
      HealthCheckPath: '/healthz',
      VpcId: ref('Vpc'),
    });
    const asg = resource('PoolAutoScalingGroup').Properties as Json & { LaunchTemplate: Json };
    expect(asg.TargetGroupARNs).toEqual([ref('PoolTargetGroup')]);
    expect(asg.LaunchTemplate.LaunchTemplateId).toEqual(ref('PoolLaunchTemplate'));
    expect(asg.HealthCheckType).toBe('ELB');
    const data = resource('PoolLaunchTemplate').Properties.LaunchTemplateData as Json & {
      IamInstanceProfile: Json;
    };
    expect(data.InstanceType).toBe('t3.small');
    expect(data.IamInstanceProfile).toEqual({ Arn: getAtt('PoolInstanceProfile', 'Arn') });
    const ingress = resource('PoolSecurityGroup').Properties.SecurityGroupIngress;
    expect(ingress).toEqual([
      {
        IpProtocol: 'tcp',
        FromPort: 8080,
        ToPort: 8080,
        SourceSecurityGroupId: ref('LoadBalancerSecurityGroup'),
      },
    ]);
  });

  it('reaches the pool over HTTPS only: by default CloudFront’s certificate in front of an internal ALB', () => {
    const t = resolved(template);
    const alb = t.Resources.PoolLoadBalancer?.Properties as Json;
    expect(alb.Scheme).toBe('internal');
    expect(alb.Subnets).toEqual([ref('PrivateSubnetA'), ref('PrivateSubnetB')]);
    // Only the VPC origin's interfaces, inside the VPC, reach it, on plain HTTP.
    expect(t.Resources.LoadBalancerSecurityGroup?.Properties.SecurityGroupIngress).toEqual([
      { IpProtocol: 'tcp', FromPort: 80, ToPort: 80, CidrIp: '10.42.0.0/16' },
    ]);
    const origin = t.Resources.PoolVpcOrigin?.Properties.VpcOriginEndpointConfig as Json;
    expect(origin.Arn).toEqual(ref('PoolLoadBalancer'));
    const config = t.Resources.PoolDistribution?.Properties.DistributionConfig as Json & {
      DefaultCacheBehavior: Json;
      Origins: Json[];
    };
    expect(config.ViewerCertificate).toEqual({ CloudFrontDefaultCertificate: true });
    expect(config.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('https-only');
    expect(config.DefaultCacheBehavior.AllowedMethods).toEqual(
      expect.arrayContaining(['POST', 'PUT', 'DELETE']),
    );
    expect(config.Origins[0]?.VpcOriginConfig).toMatchObject({ VpcOriginId: getAtt('PoolVpcOrigin', 'Id') });
    const policy = t.Resources.PoolCachePolicy?.Properties.CachePolicyConfig as Json & {
      ParametersInCacheKeyAndForwardedToOrigin: { HeadersConfig: { Headers: string[] } };
    };
    expect(policy.ParametersInCacheKeyAndForwardedToOrigin.HeadersConfig.Headers).toContain('Authorization');
    expect(t.Resources.PoolHttpsListener).toBeUndefined();
  });

  it('reaches the pool over its own HTTPS with a certificate and a name, and redirects HTTP to HTTPS', async () => {
    const t = resolved(
      await packaged([
        '--param=poolCertificateArn=arn:aws:acm:us-east-1:000000000000:certificate/abc',
        '--param=poolUrl=https://git-pool.example.com',
      ]),
    );
    expect(t.Resources.PoolDistribution).toBeUndefined();
    const of = (id: string) => t.Resources[id]?.Properties ?? {};
    expect(of('PoolLoadBalancer').Scheme).toBe('internet-facing');
    expect(text(of('PoolHttpListener').DefaultActions)).toContain('"Protocol":"HTTPS"');
    expect(of('PoolHttpsListener').Protocol).toBe('HTTPS');
    const git = (of('GitLambdaFunction').Environment as { Variables: Json }).Variables;
    expect(git.NARWAL_POOL_URL).toBe('https://git-pool.example.com');
  });

  it('refuses to package a certificate without a name, or a pool URL that is not https', async () => {
    const refused = (args: string[]) =>
      packaged(args).then(
        () => 'packaged',
        (error: { code?: number; stderr?: string }) => `${error.code}: ${error.stderr?.trim()}`,
      );
    expect(await refused(['--param=poolCertificateArn=arn:aws:acm:us-east-1:0:certificate/a'])).toMatch(
      /^2: narwal: poolCertificateArn needs poolUrl/,
    );
    expect(
      await refused([
        '--param=poolCertificateArn=arn:aws:acm:us-east-1:0:certificate/a',
        '--param=poolUrl=http://x.example',
      ]),
    ).toMatch(/^2: narwal: poolUrl must be https/);
  });

  it('rolls the pool: signals from healthy instances gate creation and each replacement, IMDS reachable from the container', () => {
    const asg = resource('PoolAutoScalingGroup') as unknown as {
      CreationPolicy: Json;
      UpdatePolicy: { AutoScalingRollingUpdate: Json };
    };
    expect(asg.CreationPolicy).toEqual({ ResourceSignal: { Count: '1', Timeout: 'PT15M' } });
    expect(asg.UpdatePolicy.AutoScalingRollingUpdate).toMatchObject({
      MaxBatchSize: 1,
      MinInstancesInService: '1',
      WaitOnResourceSignals: true,
    });
    const data = resource('PoolLaunchTemplate').Properties.LaunchTemplateData as {
      MetadataOptions: Json;
      UserData: { 'Fn::Base64': { 'Fn::Sub': [string, Record<string, unknown>] } };
    };
    expect(data.MetadataOptions).toEqual({
      HttpTokens: 'required',
      HttpPutResponseHopLimit: 2,
      HttpEndpoint: 'enabled',
    });
    const [script, variables] = data.UserData['Fn::Base64']['Fn::Sub'];
    expect(script).toContain(
      `cfn-signal -e "$1" --stack ${cfn('AWS::StackName')} --resource PoolAutoScalingGroup`,
    );
    expect(script).toMatch(/curl -fsS [^\n]*http:\/\/127\.0\.0\.1:8080\/healthz/);
    expect(String(variables.Unit)).toContain('docker run --name narwal-pool --rm --init');
  });

  it('boots pool instances with the unit from the repository and only variables Fn::Sub can fill', async () => {
    const data = resource('PoolLaunchTemplate').Properties.LaunchTemplateData as {
      UserData: { 'Fn::Base64': { 'Fn::Sub': [string, Record<string, unknown>] } };
    };
    const [script, variables] = data.UserData['Fn::Base64']['Fn::Sub'];
    expect(variables.Unit).toBe(await readFile(join(root, 'deploy/pool/narwal-pool.service'), 'utf8'));
    expect(script).toBe(await readFile(join(root, 'deploy/pool/user-data.sh'), 'utf8'));
    expect(script).toContain(`accesspoint=${cfn('AccessPointId')}`);
    expect(variables).toMatchObject({
      FileSystemId: ref('CacheFileSystem'),
      AccessPointId: ref('CacheAccessPoint'),
    });
    const names = [...script.matchAll(/\$\{([^}]*)\}/g)].map((m) => m[1] as string);
    for (const name of names) {
      const known = name in variables || name.startsWith('AWS::') || name in template.Resources;
      expect(known, name).toBe(true);
    }
  });

  it('outputs the git base URL and the pool URL', () => {
    expect(text(template.Outputs.GitBaseUrl)).toContain(
      text(
        `https://${cfn('ApiGatewayRestApi')}.execute-api.${cfn('AWS::Region')}.${cfn('AWS::URLSuffix')}/prod`,
      ).slice(1, -1),
    );
    expect(text(template.Outputs.PoolBaseUrl)).toContain(
      text(`https://${cfn('PoolDistribution.DomainName')}`),
    );
    expect(template.Outputs).toHaveProperty('AdminTokenSecretArn');
  });
});
