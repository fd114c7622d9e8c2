#!/usr/bin/env python3
"""Drives a running `spinwise serve` with real S3 clients (boto3 and the aws CLI) and checks every
supported call byte-exact: buckets, PUT/GET/HEAD of 0 B, 1 B, 5 MiB and 100 MiB objects (whole
and ranged), metadata and copies, listings, deletes, multipart upload (low level, boto3's
upload_file, and `aws s3 cp` of a 20 MiB file, which the CLI uploads in parts), conditional
requests (IfNoneMatch="*" and IfMatch PUTs, 304 and 412 GETs), standard object headers
(Cache-Control, Content-Disposition, ...) and response-* overrides, lifecycle configurations,
presigned URLs (boto3 SigV4 and
SigV2, `aws s3 presign`) fetched as bare HTTP, a public-read bucket read
anonymously (boto3 UNSIGNED, `aws s3 cp --no-sign-request`) and the error codes
(SignatureDoesNotMatch, NoSuchBucket, NoSuchKey, ...).

Usage:
    scripts/s3_clients_check.py --endpoint http://127.0.0.1:9000 \
        --access-key KEY --secret-key SECRET [--bucket-prefix check] [--only NAME,...]

Keys default to SPINWISE_ACCESS_KEY / SPINWISE_SECRET_KEY. Exits 0 when every check passed,
1 with a message naming the check and the mismatch otherwise, 2 when boto3 or aws is missing.
`crates/spinwise-cli/tests/s3_clients.rs` runs it against the real binary.

Adding a feature: write `def check_<feature>(ctx)` (raise `Mismatch` on a difference, use the
helpers below) and decorate it with `@check`; checks run in the order they are defined, each in
its own buckets named from `ctx.bucket(...)`. `check_aws_cli` and `check_restore_async` need a
server whose upkeep migrates staged objects within seconds (`[upkeep] migrate_after_s` in
DATA/store.toml; the Rust test sets 2 s): each waits up to a minute for its object to turn cold
(GLACIER_IR in a sync bucket, GLACIER in an async one).
"""

import argparse
import datetime
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

INSTALL_HINT = "install with: pip install awscli boto3"

try:
    import boto3
    import botocore.config
    import botocore.exceptions
    from boto3.s3.transfer import TransferConfig
except ImportError as missing:  # pragma: no cover - the message is the point
    print(f"s3_clients_check: boto3 is missing ({missing}); {INSTALL_HINT}", file=sys.stderr)
    sys.exit(2)

MIB = 1 << 20
CHECKS = []


class Mismatch(Exception):
    """A client saw something other than what the check expected."""


def check(function):
    CHECKS.append(function)
    return function


def expect(condition, message):
    if not condition:
        raise Mismatch(message)


def expect_bytes(got, want, what):
    if got != want:
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise Mismatch(f"{what}: {len(got)} bytes read, {len(want)} expected, first difference at byte {first}")


def expect_error(call, code, status=None, what=""):
    """Runs `call`, which must fail with S3 error `code` (and HTTP `status` if given)."""
    try:
        call()
    except botocore.exceptions.ClientError as error:
        got_code = error.response.get("Error", {}).get("Code")
        got_status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        expect(got_code == code, f"{what}: error code {got_code!r}, expected {code!r}")
        if status is not None:
            expect(got_status == status, f"{what}: HTTP status {got_status}, expected {status}")
        return
    raise Mismatch(f"{what}: succeeded, expected the error {code}")


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def multipart_etag(parts):
    joined = b"".join(hashlib.md5(part).digest() for part in parts)
    return f'"{hashlib.md5(joined).hexdigest()}-{len(parts)}"'


def pattern(size, seed):
    return random.Random(seed).randbytes(size)


class Context:
    def __init__(self, args, workdir):
        self.endpoint = args.endpoint
        self.access_key = args.access_key
        self.secret_key = args.secret_key
        self.prefix = args.bucket_prefix
        self.workdir = workdir
        self.s3 = self.client(self.secret_key)
        self.buckets = []

    def client(self, secret_key, read_timeout=300, signature_version=None):
        config = botocore.config.Config(
            signature_version=signature_version,
            s3={"addressing_style": "path"},
            retries={"max_attempts": 3, "mode": "standard"},
            read_timeout=read_timeout,
            connect_timeout=10,
        )
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=secret_key,
            region_name="us-east-1",
            config=config,
        )

    def bucket(self, name):
        """Creates the bucket `<prefix>-<name>` (emptied and deleted at the end)."""
        full = f"{self.prefix}-{name}"
        self.s3.create_bucket(Bucket=full)
        self.buckets.append(full)
        return full

    def get(self, bucket, key, byte_range=None):
        arguments = {"Bucket": bucket, "Key": key}
        if byte_range:
            arguments["Range"] = byte_range
        return self.s3.get_object(**arguments)["Body"].read()

    def aws(self, *arguments, s3_settings=()):
        """Runs the aws CLI against the server; returns stdout, raises Mismatch on failure.
        `s3_settings` are more `name = value` lines for the config's `s3` section."""
        config = os.path.join(self.workdir, "aws-config")
        with open(config, "w") as file:
            lines = ["addressing_style = path", *s3_settings]
            file.write("[default]\nregion = us-east-1\ns3 =\n" + "".join(f"    {line}\n" for line in lines))
        environment = dict(os.environ)
        environment.update(
            AWS_ACCESS_KEY_ID=self.access_key,
            AWS_SECRET_ACCESS_KEY=self.secret_key,
            AWS_CONFIG_FILE=config,
            AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.workdir, "no-credentials"),
            AWS_DEFAULT_REGION="us-east-1",
        )
        environment.pop("AWS_PROFILE", None)
        command = ["aws", "--endpoint-url", self.endpoint, *arguments]
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise Mismatch(f"`{' '.join(command)}` failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def clean_up(self):
        for bucket in self.buckets:
            try:
                for upload in self.s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
                    self.s3.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
                while True:
                    listed = self.s3.list_objects_v2(Bucket=bucket)
                    keys = [{"Key": item["Key"]} for item in listed.get("Contents", [])]
                    if not keys:
                        break
                    self.s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                self.s3.delete_bucket(Bucket=bucket)
            except botocore.exceptions.ClientError as error:
                print(f"s3_clients_check: cleaning up {bucket}: {error}", file=sys.stderr)


@check
def check_buckets(ctx):
    name = ctx.bucket("buckets")
    listed = [b["Name"] for b in ctx.s3.list_buckets()["Buckets"]]
    expect(name in listed, f"ListBuckets {listed} lacks {name}")
    ctx.s3.head_bucket(Bucket=name)
    ctx.s3.get_bucket_location(Bucket=name)
    versioning = ctx.s3.get_bucket_versioning(Bucket=name)
    expect("Status" not in versioning, f"GetBucketVersioning of a new bucket: {versioning.get('Status')}")
    status = ctx.aws("s3api", "get-bucket-versioning", "--bucket", name).strip()
    expect(status == "", f"aws s3api get-bucket-versioning printed {status!r}")
    expect_error(lambda: ctx.s3.create_bucket(Bucket=name), "BucketAlreadyOwnedByYou", 409, "CreateBucket twice")
    temporary = f"{ctx.prefix}-temporary"
    ctx.s3.create_bucket(Bucket=temporary)
    ctx.s3.put_object(Bucket=temporary, Key="k", Body=b"x")
    expect_error(lambda: ctx.s3.delete_bucket(Bucket=temporary), "BucketNotEmpty", 409, "DeleteBucket non-empty")
    ctx.s3.delete_object(Bucket=temporary, Key="k")
    ctx.s3.delete_bucket(Bucket=temporary)
    expect_error(lambda: ctx.s3.head_bucket(Bucket=temporary), "404", 404, "HeadBucket after delete")


@check
def check_objects_byte_exact(ctx):
    bucket = ctx.bucket("sizes")
    for seed, size in enumerate([0, 1, 5 * MIB, 100 * MIB]):
        key = f"object-{size}"
        data = pattern(size, seed)
        put = ctx.s3.put_object(Bucket=bucket, Key=key, Body=data)
        expect(put["ETag"] == f'"{md5_hex(data)}"', f"PUT {size} B: ETag {put['ETag']}")
        expect_bytes(ctx.get(bucket, key), data, f"GET {size} B")
        head = ctx.s3.head_object(Bucket=bucket, Key=key)
        expect(head["ContentLength"] == size, f"HEAD {size} B: length {head['ContentLength']}")
        expect(head["ETag"] == put["ETag"], f"HEAD {size} B: ETag {head['ETag']}")
        # A sync bucket: staged (STANDARD, which S3 omits) or migrated and served by GET (GLACIER_IR).
        expect(head.get("StorageClass", "STANDARD") in ("STANDARD", "GLACIER_IR"), f"HEAD storage class {head}")
        if size > 1:
            first, last = size // 3, size - 1
            got = ctx.get(bucket, key, f"bytes={first}-{last}")
            expect_bytes(got, data[first:last + 1], f"GET {size} B bytes={first}-{last}")
            expect_bytes(ctx.get(bucket, key, "bytes=-7"), data[-7:], f"GET {size} B suffix range")
    expect_error(lambda: ctx.get(bucket, "object-1", "bytes=5-9"), "InvalidRange", 416, "range past the end")


@check
def check_metadata_and_copies(ctx):
    bucket = ctx.bucket("meta")
    data = pattern(4096, 11)
    ctx.s3.put_object(Bucket=bucket, Key="source", Body=data, ContentType="text/x-check", Metadata={"colour": "blue"})
    head = ctx.s3.head_object(Bucket=bucket, Key="source")
    expect(head["ContentType"] == "text/x-check", f"Content-Type {head.get('ContentType')}")
    expect(head["Metadata"] == {"colour": "blue"}, f"metadata {head.get('Metadata')}")
    ctx.s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "source"})
    copied = ctx.s3.head_object(Bucket=bucket, Key="copy")
    expect(copied["Metadata"] == {"colour": "blue"}, f"COPY kept {copied.get('Metadata')}")
    expect_bytes(ctx.get(bucket, "copy"), data, "GET of a copy")
    ctx.s3.copy_object(
        Bucket=bucket, Key="replaced", CopySource={"Bucket": bucket, "Key": "source"},
        MetadataDirective="REPLACE", Metadata={"colour": "red"}, ContentType="application/x-other",
    )
    replaced = ctx.s3.head_object(Bucket=bucket, Key="replaced")
    expect(replaced["Metadata"] == {"colour": "red"}, f"REPLACE gave {replaced.get('Metadata')}")
    expect(replaced["ContentType"] == "application/x-other", f"REPLACE gave {replaced.get('ContentType')}")


@check
def check_lifecycle(ctx):
    """A lifecycle configuration set with boto3 reads back with the aws CLI, survives bucket
    tagging, refuses what it cannot honour and is deleted."""
    bucket = ctx.bucket("lifecycle")
    expect_error(lambda: ctx.s3.get_bucket_lifecycle_configuration(Bucket=bucket), "NoSuchLifecycleConfiguration",
                 404, "GetBucketLifecycleConfiguration without rules")
    rules = [{"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 30},
              "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}}]
    ctx.s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    ctx.s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "team", "Value": "ops"}]})
    shown = json.loads(ctx.aws("s3api", "get-bucket-lifecycle-configuration", "--bucket", bucket))["Rules"]
    expect(len(shown) == 1 and shown[0]["ID"] == "tmp" and shown[0]["Expiration"] == {"Days": 30}
           and shown[0]["Filter"] == {"Prefix": "tmp/"}
           and shown[0]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7},
           f"aws s3api get-bucket-lifecycle-configuration printed {shown}")
    online = [{"ID": "ia", "Status": "Enabled", "Filter": {"Prefix": ""},
               "Transitions": [{"Days": 30, "StorageClass": "STANDARD_IA"}]}]
    expect_error(lambda: ctx.s3.put_bucket_lifecycle_configuration(
        Bucket=bucket, LifecycleConfiguration={"Rules": online}), "NotImplemented", 501, "a transition to an online class")
    cold = [{"ID": "cold", "Status": "Enabled", "Filter": {"Prefix": "archive/"},
             "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}]
    ctx.s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": cold})
    shown = json.loads(ctx.aws("s3api", "get-bucket-lifecycle-configuration", "--bucket", bucket))["Rules"]
    expect(len(shown) == 1 and shown[0]["Transitions"] == [{"Days": 1, "StorageClass": "GLACIER"}],
           f"aws s3api get-bucket-lifecycle-configuration printed {shown} for a transition rule")
    ctx.s3.delete_bucket_lifecycle(Bucket=bucket)
    expect_error(lambda: ctx.s3.get_bucket_lifecycle_configuration(Bucket=bucket), "NoSuchLifecycleConfiguration",
                 404, "GetBucketLifecycleConfiguration after DeleteBucketLifecycle")


@check
def check_object_headers(ctx):
    """Cache-Control, Content-Disposition, Content-Encoding, Content-Language and Expires sent by
    boto3 and `aws s3 cp` come back on HEAD and GET; a presigned URL's response-* parameters
    override them for that download only."""
    bucket = ctx.bucket("headers")
    data = pattern(300_000, 71)
    expires = datetime.datetime(2026, 10, 21, 7, 28, tzinfo=datetime.timezone.utc)
    sent = {
        "CacheControl": "max-age=86400",
        "ContentDisposition": 'attachment; filename="report.pdf"',
        "ContentEncoding": "gzip",
        "ContentLanguage": "de-CH",
    }
    ctx.s3.put_object(Bucket=bucket, Key="report", Body=data, Expires=expires, **sent)
    for name, answer in (("HEAD", ctx.s3.head_object(Bucket=bucket, Key="report")),
                         ("GET", ctx.s3.get_object(Bucket=bucket, Key="report"))):
        shown = {field: answer.get(field) for field in sent}
        expect(shown == sent, f"{name} showed {shown}, sent {sent}")
        expect(answer.get("Expires") == expires, f"{name} Expires {answer.get('Expires')}")
    url = ctx.s3.generate_presigned_url("get_object", ExpiresIn=300, Params={
        "Bucket": bucket, "Key": "report", "ResponseContentDisposition": 'inline; filename="view.pdf"',
        "ResponseContentType": "application/pdf"})
    with urllib.request.urlopen(url, timeout=300) as answer:
        expect(answer.headers["Content-Disposition"] == 'inline; filename="view.pdf"',
               f"presigned override: Content-Disposition {answer.headers['Content-Disposition']}")
        expect(answer.headers["Content-Type"] == "application/pdf", f"presigned override: {answer.headers['Content-Type']}")
        expect_bytes(answer.read(), data, "the presigned download with overrides")
    head = ctx.s3.head_object(Bucket=bucket, Key="report")
    expect(head["ContentDisposition"] == sent["ContentDisposition"], "an override changed the object")
    source = os.path.join(ctx.workdir, "headers-source")
    with open(source, "wb") as file:
        file.write(data)
    ctx.aws("s3", "cp", source, f"s3://{bucket}/cli", "--cache-control", "no-cache",
            "--content-disposition", "inline", "--content-language", "fr")
    head = ctx.s3.head_object(Bucket=bucket, Key="cli")
    shown = (head.get("CacheControl"), head.get("ContentDisposition"), head.get("ContentLanguage"))
    expect(shown == ("no-cache", "inline", "fr"), f"aws s3 cp --cache-control ...: HEAD showed {shown}")


@check
def check_listing(ctx):
    bucket = ctx.bucket("lists")
    keys = ["a/1", "a/2", "b/1", "c", "d"]
    for key in keys:
        ctx.s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    every = ctx.s3.list_objects_v2(Bucket=bucket)
    expect([o["Key"] for o in every["Contents"]] == keys, f"ListObjectsV2 {every.get('Contents')}")
    grouped = ctx.s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    prefixes = [p["Prefix"] for p in grouped.get("CommonPrefixes", [])]
    expect(prefixes == ["a/", "b/"], f"CommonPrefixes {prefixes}")
    expect([o["Key"] for o in grouped["Contents"]] == ["c", "d"], f"grouped Contents {grouped['Contents']}")
    under = ctx.s3.list_objects_v2(Bucket=bucket, Prefix="a/")
    expect([o["Key"] for o in under["Contents"]] == ["a/1", "a/2"], f"Prefix a/: {under['Contents']}")
    seen, token = [], None
    while True:
        arguments = {"Bucket": bucket, "MaxKeys": 2}
        if token:
            arguments["ContinuationToken"] = token
        page = ctx.s3.list_objects_v2(**arguments)
        seen += [o["Key"] for o in page.get("Contents", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    expect(seen == keys, f"paged ListObjectsV2 {seen}")
    paginated = [o["Key"] for page in ctx.s3.get_paginator("list_objects").paginate(Bucket=bucket, PaginationConfig={"PageSize": 2}) for o in page.get("Contents", [])]
    expect(paginated == keys, f"paged ListObjects (v1) {paginated}")


@check
def check_deletes(ctx):
    bucket = ctx.bucket("deletes")
    for key in ["x", "y", "z"]:
        ctx.s3.put_object(Bucket=bucket, Key=key, Body=b"data")
    ctx.s3.delete_object(Bucket=bucket, Key="x")
    ctx.s3.delete_object(Bucket=bucket, Key="never-existed")
    expect_error(lambda: ctx.s3.get_object(Bucket=bucket, Key="x"), "NoSuchKey", 404, "GET after DELETE")
    done = ctx.s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "y"}, {"Key": "z"}, {"Key": "absent"}]})
    deleted = sorted(d["Key"] for d in done.get("Deleted", []))
    expect(deleted == ["absent", "y", "z"], f"DeleteObjects reported {deleted}")
    expect("Contents" not in ctx.s3.list_objects_v2(Bucket=bucket), "keys left after DeleteObjects")


@check
def check_multipart_low_level(ctx):
    bucket = ctx.bucket("multipart")
    key = "assembled.bin"
    upload_id = ctx.s3.create_multipart_upload(Bucket=bucket, Key=key, ContentType="application/x-parts")["UploadId"]
    parts = [pattern(5 * MIB, 21), pattern(5 * MIB, 22), pattern(1, 23)]
    etags = []
    for number, data in enumerate(parts, start=1):
        etags.append(ctx.s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data)["ETag"])
    listed = ctx.s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id)
    sizes = [(p["PartNumber"], p["Size"]) for p in listed["Parts"]]
    expect(sizes == [(1, 5 * MIB), (2, 5 * MIB), (3, 1)], f"ListParts {sizes}")
    uploads = ctx.s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    expect([(u["Key"], u["UploadId"]) for u in uploads] == [(key, upload_id)], f"ListMultipartUploads {uploads}")
    named = [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, start=1)]
    expect_error(
        lambda: ctx.s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": named[::-1]}),
        "InvalidPartOrder", 400, "Complete out of order",
    )
    done = ctx.s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": named})
    expect(done["ETag"] == multipart_etag(parts), f"Complete ETag {done['ETag']}, expected {multipart_etag(parts)}")
    whole = b"".join(parts)
    expect_bytes(ctx.get(bucket, key), whole, "GET of a completed multipart object")
    first, last = 5 * MIB - 10, 5 * MIB + 10
    expect_bytes(ctx.get(bucket, key, f"bytes={first}-{last}"), whole[first:last + 1], "GET across a part boundary")
    head = ctx.s3.head_object(Bucket=bucket, Key=key)
    expect(head["ContentType"] == "application/x-parts", f"multipart Content-Type {head.get('ContentType')}")
    expect_error(
        lambda: ctx.s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": named}),
        "NoSuchUpload", 404, "Complete twice",
    )
    aborted = ctx.s3.create_multipart_upload(Bucket=bucket, Key="aborted")["UploadId"]
    etag = ctx.s3.upload_part(Bucket=bucket, Key="aborted", UploadId=aborted, PartNumber=1, Body=b"abc")["ETag"]
    ctx.s3.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=aborted)
    expect_error(
        lambda: ctx.s3.complete_multipart_upload(Bucket=bucket, Key="aborted", UploadId=aborted, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]}),
        "NoSuchUpload", 404, "Complete after Abort",
    )


@check
def check_multipart_upload_file(ctx):
    """boto3's managed transfer: upload_file in 5 MiB parts, download_file back."""
    bucket = ctx.bucket("transfer")
    data = pattern(12 * MIB + 3, 31)
    source = os.path.join(ctx.workdir, "transfer-source")
    target = os.path.join(ctx.workdir, "transfer-target")
    with open(source, "wb") as file:
        file.write(data)
    config = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB, max_concurrency=4)
    ctx.s3.upload_file(source, bucket, "managed.bin", Config=config)
    head = ctx.s3.head_object(Bucket=bucket, Key="managed.bin")
    chunks = [data[i:i + 5 * MIB] for i in range(0, len(data), 5 * MIB)]
    expect(head["ETag"] == multipart_etag(chunks), f"upload_file ETag {head['ETag']}, expected {multipart_etag(chunks)}")
    ctx.s3.download_file(bucket, "managed.bin", target, Config=config)
    with open(target, "rb") as file:
        expect_bytes(file.read(), data, "download_file of an upload_file object")


@check
def check_aws_cli(ctx):
    """`aws s3 cp` uploads 20 MiB in 8 MiB parts; ls, cp back, rm."""
    bucket = ctx.bucket("cli")
    data = pattern(20 * MIB, 41)
    source = os.path.join(ctx.workdir, "cli-source")
    target = os.path.join(ctx.workdir, "cli-target")
    with open(source, "wb") as file:
        file.write(data)
    ctx.aws("s3", "cp", source, f"s3://{bucket}/dir/cli.bin")
    listing = ctx.aws("s3", "ls", f"s3://{bucket}/dir/")
    expect("cli.bin" in listing and str(len(data)) in listing, f"aws s3 ls printed: {listing!r}")
    head = ctx.s3.head_object(Bucket=bucket, Key="dir/cli.bin")
    expect(head["ETag"].endswith('-3"'), f"aws s3 cp of 20 MiB is not a 3-part upload: ETag {head['ETag']}")
    # Once migrated, a sync bucket's object is GLACIER_IR (a GET serves it after the spin-up), which
    # the aws CLI downloads without --force-glacier-transfer (it skips GLACIER and DEEP_ARCHIVE).
    wait_for_class(ctx, bucket, "dir/cli.bin", "GLACIER_IR")
    ctx.aws("s3", "cp", f"s3://{bucket}/dir/cli.bin", target)
    with open(target, "rb") as file:
        expect_bytes(file.read(), data, "aws s3 cp back")
    ctx.aws("s3", "rm", f"s3://{bucket}/dir/cli.bin")
    expect_error(lambda: ctx.s3.head_object(Bucket=bucket, Key="dir/cli.bin"), "404", 404, "HEAD after aws s3 rm")


def wait_for_class(ctx, bucket, key, storage_class):
    """Waits up to a minute for the server's upkeep to migrate `key` (HEAD shows `storage_class`)."""
    deadline = time.time() + 60
    while ctx.s3.head_object(Bucket=bucket, Key=key).get("StorageClass") != storage_class:
        expect(time.time() < deadline, f"{key} not {storage_class} within 60 s (does the server's upkeep migrate?)")
        time.sleep(0.2)


@check
def check_errors(ctx):
    bucket = ctx.bucket("errors")
    ctx.s3.put_object(Bucket=bucket, Key="present", Body=b"here")
    wrong = ctx.client(ctx.secret_key + "x")
    expect_error(lambda: wrong.list_buckets(), "SignatureDoesNotMatch", 403, "wrong secret, ListBuckets")
    expect_error(lambda: wrong.get_object(Bucket=bucket, Key="present"), "SignatureDoesNotMatch", 403, "wrong secret, GET")
    missing = f"{ctx.prefix}-no-such-bucket"
    expect_error(lambda: ctx.s3.get_object(Bucket=missing, Key="k"), "NoSuchBucket", 404, "GET in an unknown bucket")
    expect_error(lambda: ctx.s3.list_objects_v2(Bucket=missing), "NoSuchBucket", 404, "List of an unknown bucket")
    # boto3 sends this PUT with `Expect: 100-continue`; refused before the body, it reuses the
    # connection. The GET right after it on the same client once failed its signature (the
    # server read the GET's first bytes as the refused body; docs/s3.md "Connections").
    expect_error(lambda: ctx.s3.put_object(Bucket=missing, Key="k", Body=b"x"), "NoSuchBucket", 404, "PUT into an unknown bucket")
    expect_error(lambda: ctx.s3.get_object(Bucket=bucket, Key="absent"), "NoSuchKey", 404, "GET of an unknown key")
    expect_error(lambda: ctx.s3.head_object(Bucket=bucket, Key="absent"), "404", 404, "HEAD of an unknown key")
    bad_md5 = "AAAAAAAAAAAAAAAAAAAAAA=="
    expect_error(lambda: ctx.s3.put_object(Bucket=bucket, Key="digest", Body=b"body", ContentMD5=bad_md5), "BadDigest", 400, "wrong Content-MD5")
    expect_error(lambda: ctx.s3.get_object(Bucket=bucket, Key="digest"), "NoSuchKey", 404, "a refused PUT stored something")


@check
def check_conditional_requests(ctx):
    bucket = ctx.bucket("conditional")
    created = ctx.s3.put_object(Bucket=bucket, Key="once", Body=b"first", IfNoneMatch="*")
    etag = created["ETag"]
    expect_error(lambda: ctx.s3.put_object(Bucket=bucket, Key="once", Body=b"second", IfNoneMatch="*"),
                 "PreconditionFailed", 412, "If-None-Match: * over an existing key")
    expect_bytes(ctx.get(bucket, "once"), b"first", "the key after a refused conditional PUT")
    expect_error(lambda: ctx.s3.get_object(Bucket=bucket, Key="once", IfNoneMatch=etag), "304", 304,
                 "GET If-None-Match with the current ETag")
    expect_error(lambda: ctx.s3.get_object(Bucket=bucket, Key="once", IfMatch='"0"'), "PreconditionFailed", 412,
                 "GET If-Match with another ETag")
    matched = ctx.s3.get_object(Bucket=bucket, Key="once", IfMatch=etag)["Body"].read()
    expect_bytes(matched, b"first", "GET If-Match with the current ETag")
    ctx.s3.put_object(Bucket=bucket, Key="once", Body=b"replaced", IfMatch=etag)
    expect_error(lambda: ctx.s3.put_object(Bucket=bucket, Key="once", Body=b"stale", IfMatch=etag),
                 "PreconditionFailed", 412, "If-Match PUT with a replaced ETag")
    expect_bytes(ctx.get(bucket, "once"), b"replaced", "the key after a stale conditional PUT")


@check
def check_public_read(ctx):
    """A bucket made public-read with the aws CLI serves anonymous downloads and lists, nothing else."""
    bucket = ctx.bucket("public")
    ctx.s3.put_object(Bucket=bucket, Key="open.txt", Body=b"for everyone")
    anonymous = boto3.client(
        "s3",
        endpoint_url=ctx.endpoint,
        region_name="us-east-1",
        config=botocore.config.Config(signature_version=botocore.UNSIGNED, s3={"addressing_style": "path"}),
    )
    expect_error(lambda: anonymous.get_object(Bucket=bucket, Key="open.txt"), "AccessDenied", 403,
                 "anonymous GET from a private bucket")
    ctx.aws("s3api", "put-bucket-acl", "--bucket", bucket, "--acl", "public-read")
    expect_bytes(anonymous.get_object(Bucket=bucket, Key="open.txt")["Body"].read(), b"for everyone",
                 "anonymous GET from a public-read bucket")
    listed = [item["Key"] for item in anonymous.list_objects_v2(Bucket=bucket).get("Contents", [])]
    expect(listed == ["open.txt"], f"anonymous listing: {listed}")
    target = os.path.join(ctx.workdir, "public-target")
    ctx.aws("s3", "cp", "--no-sign-request", f"s3://{bucket}/open.txt", target)
    with open(target, "rb") as file:
        expect_bytes(file.read(), b"for everyone", "aws s3 cp --no-sign-request")
    expect_error(lambda: anonymous.put_object(Bucket=bucket, Key="open.txt", Body=b"vandal"), "AccessDenied", 403,
                 "anonymous PUT into a public-read bucket")
    expect_error(lambda: anonymous.delete_object(Bucket=bucket, Key="open.txt"), "AccessDenied", 403,
                 "anonymous DELETE in a public-read bucket")
    expect_bytes(ctx.get(bucket, "open.txt"), b"for everyone", "the object after refused anonymous writes")
    ctx.s3.put_bucket_acl(Bucket=bucket, ACL="private")
    expect_error(lambda: anonymous.get_object(Bucket=bucket, Key="open.txt"), "AccessDenied", 403,
                 "anonymous GET after the bucket went private again")


def fetch(url, method="GET", data=None):
    """A bare HTTP request, as a browser or curl sends a presigned URL: (status, body, S3 error code)."""
    request = urllib.request.Request(url, method=method, data=data)
    if data is not None:
        # urllib would add a form Content-Type, which a SigV2 URL signs as empty.
        request.add_header("Content-Type", "")
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            return answer.status, answer.read(), None
    except urllib.error.HTTPError as error:
        body = error.read()
        code = body.split(b"<Code>")[1].split(b"</Code>")[0].decode() if b"<Code>" in body else None
        return error.code, body, code


@check
def check_presigned_urls(ctx):
    """URLs from boto3's generate_presigned_url (SigV4 and SigV2) and `aws s3 presign` work as
    bare HTTP for their own method and key until they expire, and for nothing else."""
    bucket = ctx.bucket("presigned")
    data = pattern(MIB + 7, 61)
    ctx.s3.put_object(Bucket=bucket, Key="shared.bin", Body=data)
    for version in ("s3v4", "s3"):
        signer = ctx.client(ctx.secret_key, signature_version=version)
        url = signer.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "shared.bin"}, ExpiresIn=300)
        status, body, code = fetch(url)
        expect(status == 200, f"{version} presigned GET: {status} {code}")
        expect_bytes(body, data, f"{version} presigned GET")
        status, _, code = fetch(url.replace("/shared.bin", "/other.bin"))
        expect((status, code) == (403, "SignatureDoesNotMatch"), f"{version} URL for another key: {status} {code}")
        status, _, code = fetch(url, method="DELETE")
        expect((status, code) == (403, "SignatureDoesNotMatch"), f"{version} GET URL as a DELETE: {status} {code}")
        upload = pattern(200_000, 62)
        url = signer.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": f"up-{version}"}, ExpiresIn=300)
        status, _, code = fetch(url, method="PUT", data=upload)
        expect(status == 200, f"{version} presigned PUT: {status} {code}")
        expect_bytes(ctx.get(bucket, f"up-{version}"), upload, f"the object a {version} presigned PUT stored")
        url = signer.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "shared.bin"}, ExpiresIn=1)
        time.sleep(2.1)
        status, _, code = fetch(url)
        expect((status, code) == (403, "AccessDenied"), f"{version} expired URL: {status} {code}")
    url = ctx.aws("s3", "presign", f"s3://{bucket}/shared.bin", "--expires-in", "300").strip()
    status, body, code = fetch(url)
    expect(status == 200, f"`aws s3 presign` URL: {status} {code}")
    expect_bytes(body, data, "`aws s3 presign` URL")


@check
def check_restore_async(ctx):
    bucket = ctx.bucket("restore")
    mode = {"Key": "spinwise-restore-mode", "Value": "async"}
    ctx.s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [mode, {"Key": "team", "Value": "archive"}]})
    tags = ctx.s3.get_bucket_tagging(Bucket=bucket)["TagSet"]
    expect(mode in tags and {"Key": "team", "Value": "archive"} in tags, f"bucket tags {tags}")
    data = pattern(300_000, 43)
    ctx.s3.put_object(Bucket=bucket, Key="cold.bin", Body=data)
    expect_error(
        lambda: ctx.s3.restore_object(Bucket=bucket, Key="cold.bin", RestoreRequest={"Days": 1}),
        "InvalidObjectState", 403, "RestoreObject of a STANDARD (staged) object",
    )
    expect_bytes(ctx.get(bucket, "cold.bin"), data, "GET of a staged object in an async bucket")
    wait_for_class(ctx, bucket, "cold.bin", "GLACIER")
    head = ctx.s3.head_object(Bucket=bucket, Key="cold.bin")
    expect("Restore" not in head, f"x-amz-restore before any RestoreObject: {head.get('Restore')}")
    expect_error(lambda: ctx.get(bucket, "cold.bin"), "InvalidObjectState", 403, "GET of a cold object in an async bucket")
    accepted = ctx.s3.restore_object(Bucket=bucket, Key="cold.bin", RestoreRequest={"Days": 1})
    status = accepted["ResponseMetadata"]["HTTPStatusCode"]
    expect(status == 202, f"RestoreObject answered {status}, expected 202 Accepted")
    restore = wait_restored(ctx, bucket, "cold.bin")
    expect("expiry-date=" in restore, f"a finished restore shows its expiry: {restore!r}")
    expect_bytes(ctx.get(bucket, "cold.bin"), data, "GET of the restored copy")
    expect_bytes(ctx.get(bucket, "cold.bin", "bytes=1000-2999"), data[1000:3000], "ranged GET of the restored copy")
    shown = ctx.aws("s3api", "head-object", "--bucket", bucket, "--key", "cold.bin")
    expect('"Restore"' in shown and "GLACIER" in shown, f"aws s3api head-object: {shown}")
    again = ctx.aws("s3api", "restore-object", "--bucket", bucket, "--key", "cold.bin", "--restore-request", "Days=2")
    expect(again.strip() == "", f"aws s3api restore-object of a restored object: {again!r}")
    check_restore_tiers(ctx, bucket)


def wait_restored(ctx, bucket, key):
    """Polls HEAD until the restore of `key` is done (60 s at most); returns x-amz-restore."""
    deadline = time.time() + 60
    while True:
        restore = ctx.s3.head_object(Bucket=bucket, Key=key).get("Restore", "")
        if 'ongoing-request="false"' in restore:
            return restore
        expect('ongoing-request="true"' in restore, f"x-amz-restore of {key} while restoring: {restore!r}")
        expect(time.time() < deadline, f"the restore of {key} did not finish within 60 s")
        time.sleep(0.1)


def check_restore_tiers(ctx, bucket):
    """The tier as the aws CLI sends it (GlacierJobParameters); an unknown tier is refused; an
    Expedited restore through boto3 brings the object back."""
    urgent = pattern(150_000, 45)
    ctx.s3.put_object(Bucket=bucket, Key="urgent.bin", Body=urgent)
    wait_for_class(ctx, bucket, "urgent.bin", "GLACIER")
    accepted = ctx.s3.restore_object(
        Bucket=bucket, Key="urgent.bin", RestoreRequest={"Days": 1, "GlacierJobParameters": {"Tier": "Expedited"}}
    )
    status = accepted["ResponseMetadata"]["HTTPStatusCode"]
    expect(status == 202, f"an Expedited RestoreObject answered {status}, expected 202 Accepted")
    wait_restored(ctx, bucket, "urgent.bin")
    expect_bytes(ctx.get(bucket, "urgent.bin"), urgent, "GET after an Expedited restore")
    data = pattern(200_000, 44)
    ctx.s3.put_object(Bucket=bucket, Key="bulk.bin", Body=data)
    wait_for_class(ctx, bucket, "bulk.bin", "GLACIER")
    expect_error(
        lambda: ctx.s3.restore_object(
            Bucket=bucket, Key="bulk.bin", RestoreRequest={"Days": 1, "GlacierJobParameters": {"Tier": "Fast"}}
        ),
        "InvalidArgument", 400, "RestoreObject with an unknown tier",
    )
    asked = ctx.aws(
        "s3api", "restore-object", "--bucket", bucket, "--key", "bulk.bin",
        "--restore-request", "Days=1,GlacierJobParameters={Tier=Bulk}",
    )
    expect(asked.strip() == "", f"aws s3api restore-object with Tier=Bulk: {asked!r}")
    restore = ctx.s3.head_object(Bucket=bucket, Key="bulk.bin").get("Restore", "")
    # Ongoing while it waits for its group to spin up for other work (or already done if the
    # group was still up from the migration that just wrote it).
    expect("ongoing-request=" in restore, f"x-amz-restore after a Bulk restore: {restore!r}")


def parse_arguments(description=__doc__, bucket_prefix="s3-clients-check"):
    """The command line both client scripts take (this one and s3_client_matrix.py)."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--endpoint", required=True, help="http://HOST:PORT of spinwise serve")
    parser.add_argument("--access-key", default=os.environ.get("SPINWISE_ACCESS_KEY"))
    parser.add_argument("--secret-key", default=os.environ.get("SPINWISE_SECRET_KEY"))
    parser.add_argument("--bucket-prefix", default=bucket_prefix, help="buckets are <prefix>-<check>")
    parser.add_argument("--only", default="", help="comma-separated check names (default: all)")
    arguments = parser.parse_args()
    if not arguments.access_key or not arguments.secret_key:
        parser.error("--access-key and --secret-key (or SPINWISE_ACCESS_KEY / SPINWISE_SECRET_KEY) are needed")
    return arguments


def main():
    arguments = parse_arguments()
    if shutil.which("aws") is None:
        print(f"s3_clients_check: the aws CLI is not on PATH; {INSTALL_HINT}", file=sys.stderr)
        return 2
    wanted = [name for name in arguments.only.split(",") if name]
    known = {function.__name__ for function in CHECKS}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        print(f"s3_clients_check: unknown checks {unknown}; known: {sorted(known)}", file=sys.stderr)
        return 2
    failures = []
    with tempfile.TemporaryDirectory(prefix="s3-clients-check-") as workdir:
        ctx = Context(arguments, workdir)
        for function in CHECKS:
            if wanted and function.__name__ not in wanted:
                continue
            started = time.monotonic()
            try:
                function(ctx)
                print(f"ok   {function.__name__} ({time.monotonic() - started:.1f} s)", flush=True)
            except (Mismatch, botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
                failures.append(function.__name__)
                print(f"FAIL {function.__name__}: {type(error).__name__}: {error}", flush=True)
        ctx.clean_up()
    if failures:
        print(f"s3_clients_check: {len(failures)} check(s) failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("s3_clients_check: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
