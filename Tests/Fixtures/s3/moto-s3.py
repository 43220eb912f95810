"""An S3-compatible server on loopback for the report-delivery tests: moto's, with request signatures
enforced (INITIAL_NO_AUTH_ACTION_COUNT lets only this script's own set-up through unsigned).

    python moto-s3.py BUCKET

Creates an IAM user allowed s3:* and its access key, a role allowed s3:* and temporary credentials of that
role (STS AssumeRole: a key, a secret and a session token, as instance roles hand out), creates BUCKET with
the user's key, prints `LISTENING <port> <access key id> <secret access key> <temporary key id> <temporary
secret> <session token>` and serves until its standard input closes.
"""
import json
import os
import sys

# CreateUser, CreateAccessKey, PutUserPolicy, CreateRole and PutRolePolicy run unsigned; everything after
# must be signed by a key.
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "5"

import boto3  # noqa: E402 (moto reads the variable when imported)
from moto.server import ThreadedMotoServer  # noqa: E402

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
_, port = server.get_host_and_port()
endpoint = f"http://127.0.0.1:{port}"
iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam.create_user(UserName="clawback")
key = iam.create_access_key(UserName="clawback")["AccessKey"]
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:*", "sts:AssumeRole"], "Resource": "*"}]}
iam.put_user_policy(UserName="clawback", PolicyName="reports", PolicyDocument=json.dumps(policy))
trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}
role = iam.create_role(RoleName="clawback-reports", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
iam.put_role_policy(RoleName="clawback-reports", PolicyName="reports", PolicyDocument=json.dumps(policy))
s3 = boto3.client(
    "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"]
)
s3.create_bucket(Bucket=sys.argv[1])
sts = boto3.client(
    "sts", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"]
)
temporary = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="clawback")["Credentials"]
print(
    "LISTENING", port, key["AccessKeyId"], key["SecretAccessKey"], temporary["AccessKeyId"], temporary["SecretAccessKey"],
    temporary["SessionToken"], flush=True,
)
sys.stdin.read()
server.stop()
