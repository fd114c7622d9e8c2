#!/usr/bin/env python3
"""Loops boto3 over a refused `Expect: 100-continue` PUT and the GET after it on one client.

Each round PUTs one byte into a bucket that does not exist (boto3 sends PutObject with
`Expect: 100-continue`; the server refuses it with 404 before reading the body) and then GETs an
existing object on the same client, which reuses the connection. It prints how many GETs failed,
by error code. A server that keeps such a connection open may read the GET's first bytes as the
refused body; docs/s3.md "Connections" has the story and the numbers.

Usage: s3_refused_body_loop.py ENDPOINT ACCESS_KEY SECRET_KEY ROUNDS
Exits non-zero when any GET failed.
"""
import sys

import boto3
import botocore
from botocore.config import Config


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    endpoint, access, secret, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}),
    )
    try:
        s3.create_bucket(Bucket="refused-body-loop")
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    s3.put_object(Bucket="refused-body-loop", Key="present", Body=b"here")
    failed = {}
    for _ in range(rounds):
        try:
            s3.put_object(Bucket="refused-body-loop-missing", Key="k", Body=b"x")
            sys.exit("a PUT into a missing bucket was accepted")
        except botocore.exceptions.ClientError as error:
            assert error.response["Error"]["Code"] == "NoSuchBucket", error.response
        try:
            body = s3.get_object(Bucket="refused-body-loop", Key="present")["Body"].read()
            assert body == b"here", body
        except botocore.exceptions.ClientError as error:
            code = error.response["Error"]["Code"]
            failed[code] = failed.get(code, 0) + 1
    print(f"{rounds} rounds, failed GETs by code: {failed}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
