/**
 * The template validator against AWS's resource schemas: each kind of mistake a deploy would
 * only find after minutes is reported, and a valid template yields nothing.
 */
import { describe, expect, it } from 'vitest';
import { type Template, validateTemplate } from '../../helpers/cfnSchema.js';

/** A CloudFormation `${...}` placeholder (not a JavaScript one). */
const placeholder = (name: string) => `\${${name}}`;

function template(resources: Template['Resources'], rest: Partial<Template> = {}): Template {
  return { Resources: resources, ...rest };
}

const table = {
  Type: 'AWS::DynamoDB::Table',
  Properties: {
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
  },
};

describe('validateTemplate', () => {
  it('accepts a valid template, intrinsics and Fn::If branches included', async () => {
    const problems = await validateTemplate(
      template(
        {
          Table: table,
          Bucket: {
            Type: 'AWS::S3::Bucket',
            DeletionPolicy: 'Retain',
            Properties: {
              VersioningConfiguration: { Status: 'Enabled' },
              BucketName: { 'Fn::Sub': `${placeholder('AWS::StackName')}-${placeholder('Table')}` },
              Tags: [{ Key: 'a', Value: { Ref: 'AWS::Region' } }],
            },
          },
        },
        {
          Conditions: { Yes: { 'Fn::Equals': ['a', 'a'] } },
          Outputs: { Arn: { Value: { 'Fn::If': ['Yes', { 'Fn::GetAtt': ['Table', 'Arn'] }, 'x'] } } },
        },
      ),
    );
    expect(problems).toEqual([]);
  });

  it('reports unknown types, unknown and missing properties, wrong types and dangling references', async () => {
    const problems = await validateTemplate(
      template(
        {
          Bucket: { Type: 'AWS::S3::Bucket', Properties: { Versioning: { Status: 'Enabled' } } },
          Versioned: { Type: 'AWS::S3::Bucket', Properties: { VersioningConfiguration: { Status: 'On' } } },
          Typo: { Type: 'AWS::S3::Bukket', Properties: {} },
          Table: { ...table, Properties: { BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [] } },
          Template: {
            Type: 'AWS::EC2::LaunchTemplate',
            DependsOn: ['Nothing'],
            Properties: { LaunchTemplateData: { MetadataOptions: { HttpPutResponseHopLimit: 'two' } } },
          },
          Group: {
            Type: 'AWS::ElasticLoadBalancingV2::TargetGroup',
            Properties: { Port: { Ref: 'Missing' } },
            Updatepolicy: {},
          },
        },
        { Outputs: { X: { Value: { 'Fn::GetAtt': ['Bucket', 'Nope'] } } } },
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'Bucket (AWS::S3::Bucket): unknown property Versioning',
        'Table (AWS::DynamoDB::Table): missing required KeySchema',
        'Typo: unknown resource type AWS::S3::Bukket',
        expect.stringMatching(/^Template: DependsOn names no resource: Nothing/),
        expect.stringMatching(/HttpPutResponseHopLimit: expected an integer, got "two"/),
        expect.stringMatching(/VersioningConfiguration.Status: On is not one of Enabled, Suspended/),
        'Group: Ref names nothing: Missing',
        'Group: unknown resource attribute Updatepolicy',
        'Outputs: AWS::S3::Bucket has no attribute Nope (Fn::GetAtt Bucket)',
      ]),
    );
  });

  it('checks each branch of an Fn::If and the names inside an Fn::Sub', async () => {
    const problems = await validateTemplate(
      template(
        {
          Table: table,
          Other: {
            ...table,
            Properties: {
              ...table.Properties,
              TableName: { 'Fn::Sub': `${placeholder('Table.Nope')}-${placeholder('Unknown')}` },
            },
          },
          Bucket: {
            Type: 'AWS::S3::Bucket',
            Properties: {
              VersioningConfiguration: { Status: { 'Fn::If': ['Nope', 'Enabled', 'Sometimes'] } },
            },
          },
        },
        { Conditions: {} },
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/Fn::If names no condition: Nope/),
        expect.stringMatching(/Status: Sometimes is not one of/),
        expect.stringMatching(/has no attribute Nope \(Fn::GetAtt Table\)/),
        'Other: Ref names nothing: Unknown',
      ]),
    );
  });
});
