#!/usr/bin/env python3
"""Puts or describes the objects of tests/it/store_recover.rs's S3 check (issue 30 item 4).

`put KEY...` creates the bucket `recovered` (once) and puts each KEY with a Content-Type,
Cache-Control and user metadata; `describe` prints, as one JSON object, the buckets and, for
every object of `recovered`, its ETag, headers, user metadata and the SHA-256 of its bytes
(read with GET), so the test compares what S3 serves before the catalog was lost and after
`spinwise store recover`.
"""
import argparse
import hashlib
import json

import boto3
from botocore.config import Config

BUCKET = "recovered"


def body(key):
    """Each key's bytes: distinct, a few hundred kB."""
    seed = sum(key.encode())
    return bytes((seed + i * 7) % 251 for i in range(200_000 + seed))


def client(args):
    return boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        aws_access_key_id=args.access_key,
        aws_secret_access_key=args.secret_key,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def put(s3, keys):
    names = [bucket["Name"] for bucket in s3.list_buckets()["Buckets"]]
    if BUCKET not in names:
        s3.create_bucket(Bucket=BUCKET)
    for key in keys:
        s3.put_object(
            Bucket=BUCKET,
            Key=key,
            Body=body(key),
            ContentType="application/x-" + key.replace("/", "-"),
            CacheControl="max-age=60",
            Metadata={"colour": "blue-" + key.replace("/", "-")},
        )


def describe(s3):
    objects = {}
    for listed in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        key = listed["Key"]
        got = s3.get_object(Bucket=BUCKET, Key=key)
        objects[key] = {
            "etag": got["ETag"],
            "listed_etag": listed["ETag"],
            "size": listed["Size"],
            "content_type": got.get("ContentType"),
            "cache_control": got.get("CacheControl"),
            "metadata": got.get("Metadata"),
            "sha256": hashlib.sha256(got["Body"].read()).hexdigest(),
            "expected_sha256": hashlib.sha256(body(key)).hexdigest(),
        }
    buckets = sorted(bucket["Name"] for bucket in s3.list_buckets()["Buckets"])
    print(json.dumps({"buckets": buckets, "objects": objects}, sort_keys=True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--access-key", required=True)
    parser.add_argument("--secret-key", required=True)
    parser.add_argument("mode", choices=["put", "describe"])
    parser.add_argument("keys", nargs="*")
    args = parser.parse_args()
    s3 = client(args)
    if args.mode == "put":
        put(s3, args.keys)
    else:
        describe(s3)


if __name__ == "__main__":
    main()
