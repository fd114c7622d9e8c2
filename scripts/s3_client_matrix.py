#!/usr/bin/env python3
"""The client matrix: drives a running `spinwise serve` with the tools people point at S3 (the aws
CLI's `s3 sync`, boto3's listings, rclone and restic) over a tree of awkward names and checks
that every round trip is byte-exact and that a repeated sync transfers nothing.

The tree's names carry `+`, a literal `%25`, spaces, `#`, `?`, `=&;,'!~*()[]@$`, unicode
(`café/日本.txt`) and one key of exactly 1,024 bytes (S3's longest key, built from nested
directories since a file name is at most 255 bytes), beside a 0 B file and a 9 MiB one (which
`aws s3 sync` uploads in parts).

- `check_aws_cli_sync`: `aws s3 sync` up twice (the second prints nothing), waits until upkeep
  has migrated every object (GLACIER_IR, so the downloads are cold reads through spin-ups), then
  down into a new directory twice (the second prints nothing) and compares the trees.
- `check_aws_cli_empty_file_then_more_on_one_connection`: `aws s3 cp --recursive` with one
  connection of three empty files, each followed by one with a body: every file arrives, within
  15 s (a client that misreads the answer after an empty PUT waits 30 s for the server to drop
  the connection).
- `check_boto3_listing`: boto3 PUTs the same keys; ListObjectsV2 and ListObjects, paged three
  keys at a time, with a prefix, after a StartAfter and with a delimiter, return exactly the keys
  written in S3's order; the raw XML of a url-encoded listing decodes to them; every GET is
  byte-exact.
- `check_rclone`: `rclone sync` up twice (the second copies nothing), `rclone check` (plain,
  and with url-encoded ListObjects V1 and V2 listings) finds 0 differences, `rclone sync` down
  twice and compares. The remote is configured by environment variables only.
- `check_restic`: `restic init`, a backup, a change, a second backup, `check --read-data` once
  the packs are cold, `diff` names the changed and the added file, and both snapshots restore
  byte-exact.
- `check_restic_warm_metadata_cold_packs`: restic in an `async` bucket written STANDARD; a
  lifecycle Transition moves `data/` to GLACIER and leaves keys, config, index and snapshots
  STANDARD; `snapshots` and another backup work with the packs cold, a restore of cold packs is
  refused, and after RestoreObject of every pack the snapshot restores byte-exact and
  `check --read-data` passes.

Usage:
    scripts/s3_client_matrix.py --endpoint http://127.0.0.1:9000 \
        --access-key KEY --secret-key SECRET [--bucket-prefix matrix] [--only NAME,...]

The server's upkeep must migrate staged objects within seconds (`[upkeep] migrate_after_s` in
DATA/store.toml; `crates/spinwise-cli/tests/s3_client_matrix.rs` sets 2 s and runs one check per
test). Exits 0 when every selected check passed, 1 naming the failed checks, 2 when a client is
missing (with the line that installs it). Helpers (Context, expect, fetch) come from
s3_clients_check.py beside this file.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree

from s3_clients_check import Context, Mismatch, expect, fetch, parse_arguments, pattern

import botocore.exceptions

MIB = 1 << 20
LONGEST_KEY_BYTES = 1024  # S3's limit on a key's UTF-8 length
APT_HINT = "install with: apt-get install rclone restic (Debian's packages; .ci/run installs them when missing)"
PIP_HINT = "install with: pip install awscli==1.46.3 boto3==1.44.8 (.ci/run installs them)"
MATRIX = []


def matrix(*tools):
    """Registers a check that needs the command-line `tools` (besides python3 and boto3)."""

    def register(function):
        function.tools = tools
        MATRIX.append(function)
        return function

    return register


def install_hint(tool):
    return APT_HINT if tool in ("rclone", "restic") else PIP_HINT


def long_key():
    """A key of exactly LONGEST_KEY_BYTES: `long/` and directories of 200 bytes, then a file name."""
    directories = "long/" + "".join(f"{index}" * 200 + "/" for index in range(4))
    name_bytes = LONGEST_KEY_BYTES - len(directories)
    key = directories + "f" * (name_bytes - len(".txt")) + ".txt"
    assert len(key.encode()) == LONGEST_KEY_BYTES and all(len(part.encode()) <= 255 for part in key.split("/"))
    return key


def awkward_tree():
    """{key: bytes} of the names every client must carry unchanged."""
    contents = {
        "c++/a+b.txt": b"plus signs, which a form decoder reads as spaces\n",
        "percent/100%25 done.txt": b"a literal percent-2-5, which a second decoding turns into %\n",
        "with space/two  spaces .txt": b"spaces, doubled and before the dot\n",
        "hash/#1 and a#b.txt": b"hashes, which end a URL's path\n",
        "question/why?.txt": b"a question mark, which starts a URL's query\n",
        "café/日本.txt": "unicode in a directory and a file name: 日本\n".encode(),
        "misc/a=b&c;d,e'f!g~h*i(j)[k]@l$m.txt": b"query and shell punctuation\n",
        "empty.bin": b"",
        "big/nine MiB+.bin": pattern(9 * MIB, 28),
        long_key(): b"the longest key S3 allows\n",
    }
    for index in range(3):
        contents[f"plain/{index}.bin"] = pattern(1000 + index * 4096, 100 + index)
    return contents


def write_tree(root, contents):
    """Writes `contents` under `root`, every mtime set to 2020-01-01: a sync compares the local
    mtime with LastModified, and a fixed past time keeps that comparison about the server."""
    for key, data in contents.items():
        path = os.path.join(root, *key.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as file:
            file.write(data)
        os.utime(path, (1577836800, 1577836800))


def read_tree(root):
    """{relative path with `/`: bytes} of every file under `root`."""
    found = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as file:
                found[os.path.relpath(path, root).replace(os.sep, "/")] = file.read()
    return found


def expect_same_tree(got, want, what):
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    differing = sorted(key for key in set(got) & set(want) if got[key] != want[key])
    expect(
        not missing and not extra and not differing,
        f"{what}: missing {short(missing)}, unexpected {short(extra)}, different bytes in {short(differing)}",
    )


def short(keys):
    """Keys for a message, the 1,024-byte one abbreviated."""
    return [key if len(key) < 80 else f"{key[:40]}...({len(key.encode())} bytes)" for key in keys]


def lines_with(text, needle):
    return [line for line in text.splitlines() if needle in line]


def client_environment(ctx):
    """The environment for rclone and restic: the server's keys and nothing from the user's setup.
    AWS_CA_BUNDLE is dropped because rclone's AWS SDK refuses it on a plain-HTTP endpoint
    ("LoadCustomCABundleError: ... unsupported transport")."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "RCLONE_", "RESTIC_"))
    }
    environment.update(
        AWS_ACCESS_KEY_ID=ctx.access_key,
        AWS_SECRET_ACCESS_KEY=ctx.secret_key,
        HOME=os.path.join(ctx.workdir, "home"),
        NO_PROXY="127.0.0.1,localhost",
    )
    os.makedirs(environment["HOME"], exist_ok=True)
    return environment


def run(command, environment, what):
    """Runs `command`; returns (stdout, stderr); raises Mismatch naming `what` when it fails."""
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise Mismatch(f"{what}: `{' '.join(command)}` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout, done.stderr


def wait_until_cold(ctx, bucket, count):
    """Waits up to a minute for upkeep to migrate all `count` objects of `bucket` (GLACIER_IR in a
    sync bucket), so the reads that follow go through spin-ups."""
    deadline = time.time() + 60
    while True:
        classes = [
            item.get("StorageClass")
            for page in ctx.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for item in page.get("Contents", [])
        ]
        if len(classes) == count and all(found == "GLACIER_IR" for found in classes):
            return
        expect(time.time() < deadline, f"{bucket}: not all {count} objects migrated within a minute: {classes}")
        time.sleep(0.5)


@matrix("aws")
def check_aws_cli_sync(ctx):
    bucket = ctx.bucket("aws-sync")
    contents = awkward_tree()
    source = os.path.join(ctx.workdir, "aws-source")
    write_tree(source, contents)
    target = f"s3://{bucket}"
    first = ctx.aws("s3", "sync", "--no-progress", source, target)
    uploaded = lines_with(first, "upload:")
    expect(len(uploaded) == len(contents), f"first `aws s3 sync` up: {len(uploaded)} uploads of {len(contents)}:\n{first}")
    etag = ctx.s3.head_object(Bucket=bucket, Key="big/nine MiB+.bin")["ETag"]
    expect(etag.endswith('-2"'), f"`aws s3 sync` of 9 MiB is not a 2-part upload: ETag {etag}")
    again = ctx.aws("s3", "sync", "--no-progress", source, target)
    expect(
        again.strip() == "",
        "second `aws s3 sync` up transferred again (the listing it compared against did not show the keys"
        f" it had uploaded):\n{again}",
    )
    wait_until_cold(ctx, bucket, len(contents))
    download = os.path.join(ctx.workdir, "aws-download")
    down = ctx.aws("s3", "sync", "--no-progress", target, download)
    downloaded = lines_with(down, "download:")
    expect(len(downloaded) == len(contents), f"first `aws s3 sync` down: {len(downloaded)} downloads of {len(contents)}:\n{down}")
    expect_same_tree(read_tree(download), contents, "`aws s3 sync` down")
    down_again = ctx.aws("s3", "sync", "--no-progress", target, download)
    expect(down_again.strip() == "", f"second `aws s3 sync` down transferred again:\n{down_again}")


@matrix("aws")
def check_aws_cli_empty_file_then_more_on_one_connection(ctx):
    # The aws CLI 1.46 bundles botocore 1.43.62, which sends an empty PUT with `Expect:
    # 100-continue`; answered without `100 Continue`, it misreads the next answer on that
    # connection unless the server closes it (boto/botocore#3755), and that upload waits 30 s.
    bucket = ctx.bucket("aws-one-connection")
    # Three empty files, each followed by one with a body (the CLI uploads in name order).
    contents = {}
    for index in range(3):
        contents[f"{index}a-empty.bin"] = b""
        contents[f"{index}b-after.bin"] = pattern(64 * 1024, index)
    source = os.path.join(ctx.workdir, "aws-one-connection")
    write_tree(source, contents)
    started = time.monotonic()
    copied = ctx.aws("s3", "cp", "--recursive", "--no-progress", source, f"s3://{bucket}", s3_settings=["max_concurrent_requests = 1"])
    took_s = time.monotonic() - started
    expect(len(lines_with(copied, "upload:")) == len(contents), f"`aws s3 cp --recursive` on one connection:\n{copied}")
    expect(took_s < 15, f"`aws s3 cp --recursive` of {len(contents)} small files on one connection took {took_s:.1f} s")
    for key, data in contents.items():
        expect(ctx.get(bucket, key) == data, f"{key} differs after `aws s3 cp --recursive`")


@matrix()
def check_boto3_listing(ctx):
    bucket = ctx.bucket("boto3-list")
    contents = awkward_tree()
    for key, data in contents.items():
        ctx.s3.put_object(Bucket=bucket, Key=key, Body=data)
    # S3 lists in UTF-8 byte order, which is Python's code point order for str.
    keys = sorted(contents)
    # The raw answer first: with encoding-type=url every Key must decode (as botocore decodes it,
    # form style) to the key written, whatever boto3 makes of it below.
    # SigV4: boto3 presigns with SigV2 by default, which signs a bucket's path as `/bucket/`.
    signer = ctx.client(ctx.secret_key, signature_version="s3v4")
    url = signer.generate_presigned_url("list_objects_v2", Params={"Bucket": bucket, "EncodingType": "url"})
    status, body, code = fetch(url)
    expect(status == 200, f"raw ListObjectsV2?encoding-type=url: {status} {code}")
    namespace = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
    root = xml.etree.ElementTree.fromstring(body)
    expect(root.findtext("s3:EncodingType", namespaces=namespace) == "url", f"no <EncodingType>url</EncodingType> in {body[:300]!r}")
    raw = [element.text for element in root.iterfind("s3:Contents/s3:Key", namespace)]
    wrong = [
        f"<Key>{short([found])[0]}</Key> decodes to {short([urllib.parse.unquote_plus(found)])[0]!r}, not {short([want])[0]!r}"
        for found, want in zip(raw, keys)
        if urllib.parse.unquote_plus(found) != want
    ]
    expect(
        len(raw) == len(keys) and not wrong,
        f"ListObjectsV2 answered <EncodingType>url</EncodingType> with {len(raw)} keys for {len(keys)}, and these"
        f" are not url-encoded: {wrong}",
    )
    # What boto3 shows: ListObjectsV2 and ListObjects paged three keys at a time.
    listed = [
        item["Key"]
        for page in ctx.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 3})
        for item in page.get("Contents", [])
    ]
    expect(listed == keys, f"boto3 list_objects_v2: listed {short(listed)}, wrote {short(keys)}")
    listed_v1 = [
        item["Key"]
        for page in ctx.s3.get_paginator("list_objects").paginate(Bucket=bucket, PaginationConfig={"PageSize": 3})
        for item in page.get("Contents", [])
    ]
    expect(listed_v1 == keys, f"boto3 list_objects: listed {short(listed_v1)}, wrote {short(keys)}")
    for prefix in ("c++/", "percent/100%25", "café/", "question/why?"):
        found = [item["Key"] for item in ctx.s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]
        expect(found == [key for key in keys if key.startswith(prefix)], f"list_objects_v2 Prefix={prefix!r}: {found}")
    after = "hash/#1 and a#b.txt"
    found = [item["Key"] for item in ctx.s3.list_objects_v2(Bucket=bucket, StartAfter=after).get("Contents", [])]
    expect(found == [key for key in keys if key > after], f"list_objects_v2 StartAfter={after!r}: {short(found)}")
    delimited = ctx.s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    prefixes = [item["Prefix"] for item in delimited.get("CommonPrefixes", [])]
    files = [item["Key"] for item in delimited.get("Contents", [])]
    expect(prefixes == sorted({key.split("/")[0] + "/" for key in keys if "/" in key}), f"CommonPrefixes: {prefixes}")
    expect(files == [key for key in keys if "/" not in key], f"top-level keys beside the CommonPrefixes: {files}")
    for key, data in contents.items():
        got = ctx.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        expect(got == data, f"GET {short([key])[0]}: {len(got)} bytes, {len(data)} written")


def rclone(environment, *arguments):
    """Runs rclone verbosely; returns its log (stderr, where rclone reports what it copied)."""
    _, log = run(["rclone", "--config", "", "-v", *arguments], environment, f"rclone {arguments[0]}")
    return log


@matrix("rclone")
def check_rclone(ctx):
    bucket = f"{ctx.prefix}-rclone"
    # rclone creates the bucket on its first sync; cleaning up removes it.
    ctx.buckets.append(bucket)
    environment = client_environment(ctx)
    # A remote named spinwise, from environment variables only: no rclone.conf is read or written.
    environment.update(
        RCLONE_CONFIG_SPINWISE_TYPE="s3",
        RCLONE_CONFIG_SPINWISE_PROVIDER="Other",
        RCLONE_CONFIG_SPINWISE_ENV_AUTH="false",
        RCLONE_CONFIG_SPINWISE_ACCESS_KEY_ID=ctx.access_key,
        RCLONE_CONFIG_SPINWISE_SECRET_ACCESS_KEY=ctx.secret_key,
        RCLONE_CONFIG_SPINWISE_ENDPOINT=ctx.endpoint,
        RCLONE_CONFIG_SPINWISE_REGION="us-east-1",
        RCLONE_CONFIG_SPINWISE_FORCE_PATH_STYLE="true",
    )
    contents = awkward_tree()
    source = os.path.join(ctx.workdir, "rclone-source")
    write_tree(source, contents)
    remote = f"spinwise:{bucket}"
    copied = lines_with(rclone(environment, "sync", source, remote), "Copied")
    expect(len(copied) == len(contents), f"first `rclone sync` up copied {len(copied)} of {len(contents)}: {copied}")
    copied = lines_with(rclone(environment, "sync", source, remote), "Copied")
    expect(copied == [], f"second `rclone sync` up copied again: {copied}")
    # rclone check compares sizes and MD5s (ETags, or rclone's own metadata for multipart uploads).
    for listing in ([], ["--s3-list-url-encode", "true", "--s3-list-version", "2"], ["--s3-list-url-encode", "true", "--s3-list-version", "1"]):
        log = rclone(environment, "check", *listing, source, remote)
        expect("0 differences found" in log, f"`rclone check {' '.join(listing)}`:\n{log}")
    wait_until_cold(ctx, bucket, len(contents))
    download = os.path.join(ctx.workdir, "rclone-download")
    copied = lines_with(rclone(environment, "sync", remote, download), "Copied")
    expect(len(copied) == len(contents), f"first `rclone sync` down copied {len(copied)} of {len(contents)}: {copied}")
    expect_same_tree(read_tree(download), contents, "`rclone sync` down")
    copied = lines_with(rclone(environment, "sync", remote, download), "Copied")
    expect(copied == [], f"second `rclone sync` down copied again: {copied}")


@matrix("restic")
def check_restic(ctx):
    bucket = f"{ctx.prefix}-restic"
    ctx.buckets.append(bucket)
    environment = client_environment(ctx)
    environment.update(
        RESTIC_REPOSITORY=f"s3:{ctx.endpoint}/{bucket}",
        RESTIC_PASSWORD="spinwise-client-matrix",
        RESTIC_CACHE_DIR=os.path.join(ctx.workdir, "restic-cache"),
    )

    def restic(*arguments, cwd=None):
        done = subprocess.run(["restic", *arguments], env=environment, cwd=cwd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise Mismatch(f"`restic {' '.join(arguments)}` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    restic("init")
    first = awkward_tree()
    source = os.path.join(ctx.workdir, "restic-source")
    write_tree(source, first)
    # Backing up `.` from inside the tree stores its files at the snapshot's root.
    restic("backup", ".", cwd=source)
    second = dict(first)
    second["café/日本.txt"] = "changed after the first backup: 日本\n".encode()
    second["added/new #2.txt"] = b"added after the first backup\n"
    write_tree(source, {key: second[key] for key in ("café/日本.txt", "added/new #2.txt")})
    restic("backup", ".", cwd=source)
    snapshots = [snapshot["id"] for snapshot in sorted(json.loads(restic("snapshots", "--json")), key=lambda s: s["time"])]
    expect(len(snapshots) == 2, f"restic snapshots: {snapshots}")
    # Every pack and index cold: check --read-data and the restores read through spin-ups.
    count = len(ctx.s3.list_objects_v2(Bucket=bucket).get("Contents", []))
    wait_until_cold(ctx, bucket, count)
    checked = restic("check", "--read-data")
    expect("no errors were found" in checked, f"restic check --read-data:\n{checked}")
    diff = restic("diff", *snapshots)
    for line in ("M    /café/日本.txt", "+    /added/new #2.txt"):
        expect(line in diff.splitlines(), f"restic diff lacks {line!r}:\n{diff}")
    for snapshot, contents in zip(snapshots, (first, second)):
        target = os.path.join(ctx.workdir, f"restic-restore-{snapshot[:8]}")
        restic("restore", snapshot, "--target", target)
        expect_same_tree(read_tree(target), contents, f"restic restore {snapshot[:8]}")


@matrix("restic")
def check_restic_warm_metadata_cold_packs(ctx):
    """restic in an `async` bucket (GLACIER objects unreadable until restored) whose lifecycle
    rule moves `data/` cold: the keys, config, index and snapshots stay STANDARD and warm, so
    restic keeps working on the repository, while the packs go to the sleeping disks and are
    restored (RestoreObject) before a restore reads them."""
    bucket = f"{ctx.prefix}-restic-tiers"
    ctx.buckets.append(bucket)
    ctx.s3.create_bucket(Bucket=bucket)
    ctx.s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "spinwise-restore-mode", "Value": "async"}]})
    environment = client_environment(ctx)
    environment.update(
        RESTIC_REPOSITORY=f"s3:{ctx.endpoint}/{bucket}",
        RESTIC_PASSWORD="spinwise-client-matrix",
        RESTIC_CACHE_DIR=os.path.join(ctx.workdir, "restic-tiers-cache"),
    )

    def restic(*arguments, cwd=None, fails=False):
        # restic 0.14 (Debian 12) applies s3.storage-class to every file it writes, metadata
        # included, so the repository is written STANDARD and the rule below moves the packs.
        command = ["restic", "-o", "s3.storage-class=STANDARD", *arguments]
        done = subprocess.run(command, env=environment, cwd=cwd, capture_output=True, text=True, timeout=600)
        if (done.returncode != 0) != fails:
            raise Mismatch(f"`restic {' '.join(arguments)}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done.stdout + done.stderr

    def classes():
        return {
            item["Key"]: item.get("StorageClass")
            for page in ctx.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for item in page.get("Contents", [])
        }

    restic("init")
    first = {key: data for key, data in awkward_tree().items() if not key.startswith("long/")}
    source = os.path.join(ctx.workdir, "restic-tiers-source")
    write_tree(source, first)
    restic("backup", ".", cwd=source)
    written = classes()
    expect(all(found == "STANDARD" for found in written.values()), f"restic wrote non-STANDARD objects: {written}")
    ctx.s3.put_bucket_lifecycle_configuration(
        Bucket=bucket,
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": "packs-to-glacier",
                    "Status": "Enabled",
                    "Filter": {"Prefix": "data/"},
                    # A past date: due at once (the rule set wakes the lifecycle sweeper).
                    "Transitions": [{"Date": "2020-01-01T00:00:00Z", "StorageClass": "GLACIER"}],
                }
            ]
        },
    )
    deadline = time.time() + 60
    while True:
        found = classes()
        cold = all((found[key] == "GLACIER") == key.startswith("data/") for key in found)
        if cold and len(found) == len(written):
            break
        expect(time.time() < deadline, f"data/ not GLACIER (and the rest STANDARD) within a minute: {found}")
        time.sleep(0.5)
    # The metadata is warm: restic lists snapshots and backs up more without touching a pack.
    expect(len(json.loads(restic("snapshots", "--json"))) == 1, "restic snapshots after the transition")
    write_tree(source, {"added/after the transition.txt": b"written while the packs were cold\n"})
    restic("backup", ".", cwd=source)
    # Reading a cold pack without a restore is refused, as in S3 Glacier.
    snapshots = sorted(json.loads(restic("snapshots", "--json")), key=lambda s: s["time"])
    refused = restic("restore", snapshots[0]["id"], "--target", os.path.join(ctx.workdir, "restic-tiers-refused"), fails=True)
    expect("InvalidObjectState" in refused or "restore" in refused.lower(), f"restic restore of cold packs:\n{refused}")
    cold_packs = [key for key, found in classes().items() if found == "GLACIER"]
    for key in cold_packs:
        ctx.s3.restore_object(Bucket=bucket, Key=key, RestoreRequest={"Days": 1})
    deadline = time.time() + 120
    while not all('ongoing-request="false"' in ctx.s3.head_object(Bucket=bucket, Key=key).get("Restore", "") for key in cold_packs):
        expect(time.time() < deadline, "the packs' restores did not finish within two minutes")
        time.sleep(0.5)
    target = os.path.join(ctx.workdir, "restic-tiers-restore")
    restic("restore", snapshots[0]["id"], "--target", target)
    expect_same_tree(read_tree(target), first, "restic restore of restored GLACIER packs")
    checked = restic("check", "--read-data")
    expect("no errors were found" in checked, f"restic check --read-data:\n{checked}")


def clean_up(ctx):
    """Empties and deletes the matrix's buckets. A round that deletes nothing ends it (a listing
    that shows other keys than the stored ones would otherwise loop forever)."""
    for bucket in ctx.buckets:
        try:
            previous = None
            while True:
                listed = ctx.s3.list_objects_v2(Bucket=bucket)
                keys = [{"Key": item["Key"]} for item in listed.get("Contents", [])]
                if not keys or keys == previous:
                    break
                ctx.s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                previous = keys
            ctx.s3.delete_bucket(Bucket=bucket)
        except botocore.exceptions.ClientError as error:
            print(f"s3_client_matrix: cleaning up {bucket}: {error}", file=sys.stderr)


def main():
    arguments = parse_arguments(__doc__, "client-matrix")
    wanted = [name for name in arguments.only.split(",") if name]
    known = {function.__name__ for function in MATRIX}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        print(f"s3_client_matrix: unknown checks {unknown}; known: {sorted(known)}", file=sys.stderr)
        return 2
    selected = [function for function in MATRIX if not wanted or function.__name__ in wanted]
    missing = sorted({tool for function in selected for tool in function.tools if shutil.which(tool) is None})
    if missing:
        for tool in missing:
            print(f"s3_client_matrix: {tool} is not on PATH; {install_hint(tool)}", file=sys.stderr)
        return 2
    failures = []
    with tempfile.TemporaryDirectory(prefix="s3-client-matrix-") as workdir:
        ctx = Context(arguments, workdir)
        for function in selected:
            started = time.monotonic()
            try:
                function(ctx)
                print(f"ok   {function.__name__} ({time.monotonic() - started:.1f} s)", flush=True)
            except (Mismatch, botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
                failures.append(function.__name__)
                # Clients print the 1,024-byte key whole, often several times.
                message = str(error).replace(long_key(), "long/...(the 1,024-byte key)")
                print(f"FAIL {function.__name__}: {type(error).__name__}: {message}", flush=True)
        clean_up(ctx)
    if failures:
        print(f"s3_client_matrix: {len(failures)} check(s) failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("s3_client_matrix: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
