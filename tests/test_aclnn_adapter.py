"""The aclnnMsaIndexScore interface is stated in several files for several tools (the shared C++
input order, the CANN OpDef, the msopgen prototype, the kernel entry, the aclnn header, the PyNative
runner); one Python table (ms_msa.backends.signature) generates MindSpore's side. These tests check
that every statement agrees with the table, and that the package build explains itself without CANN."""
import json
import os
import re
import subprocess

import pytest

from ms_msa.backends import signature

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OP_DIR = os.path.join(REPO, "ascendc", "msa_index_score")


def _read(*parts):
    with open(os.path.join(REPO, *parts)) as f:
        return f.read()


def _snake(camel):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


def test_shared_input_order():
    enum = re.search(r"enum InputIndex : int \{(.*?)\};", _read("ms_msa", "csrc", "common", "msa_config.h"), re.S)
    names = re.findall(r"k(\w+) = (\d+)", enum.group(1))
    order = [_snake(name) for name, index in sorted(names, key=lambda x: int(x[1])) if name != "NumInputs"]
    assert order == list(signature.INPUT_NAMES)


def test_opdef_matches_the_table():
    src = _read("ascendc", "msa_index_score", "op_host", "msa_index_score_def.cpp")
    inputs = re.findall(r'this->Input\("(\w+)"\)\s*\.ParamType\((\w+)\)', src)
    assert [name for name, _ in inputs] == list(signature.INPUT_NAMES)
    declared = dict(inputs)
    for name in signature.OPTIONAL_INPUTS:
        assert declared[name] == "OPTIONAL", name
    attrs = re.findall(r'this->Attr\("(\w+)"\)\.AttrType\(OPTIONAL\)\.(String|Int)\(("?\w+"?)\)', src)
    assert [(n, t.lower().replace("string", "str"), json.loads(v)) for n, t, v in attrs] == \
        [(n, t, d) for n, t, d in signature.ACLNN_ATTRS]
    assert re.findall(r'this->Output\("(\w+)"\)', src) == [signature.OUTPUT[0]]
    ge = {"ge::DT_FLOAT16": "float16", "ge::DT_BF16": "bfloat16", "ge::DT_INT8": "int8"}
    columns = {}
    for name in ("query", "key"):
        block = re.search(r'this->Input\("%s"\).*?\.DataType\(\{(.*?)\}\)' % name, src, re.S).group(1)
        columns[name] = [ge[t.strip()] for t in block.split(",")]
    assert list(zip(columns["query"], columns["key"])) == list(signature.ASCEND_QUERY_KEY_DTYPES)


def test_msopgen_prototype_matches_the_table():
    with open(os.path.join(OP_DIR, "msa_index_score.json")) as f:
        (proto,) = json.load(f)
    assert proto["op"] == signature.OP_TYPE
    assert [i["name"] for i in proto["input_desc"]] == list(signature.INPUT_NAMES)
    assert [o["name"] for o in proto["output_desc"]] == [signature.OUTPUT[0]]
    assert [(a["name"], a["default_value"]) for a in proto["attr"]] == \
        [(n, d) for n, _, d in signature.ACLNN_ATTRS]
    short = {"fp16": "float16", "bf16": "bfloat16", "int8": "int8"}
    by_name = {i["name"]: i for i in proto["input_desc"]}
    assert list(zip([short[t] for t in by_name["query"]["type"]], [short[t] for t in by_name["key"]["type"]])) == \
        list(signature.ASCEND_QUERY_KEY_DTYPES)
    for name in signature.OPTIONAL_INPUTS:
        assert by_name[name]["param_type"] == "optional"


def test_kernel_entry_parameters():
    src = _read("ascendc", "msa_index_score", "op_kernel", "msa_index_score.cpp")
    params = re.search(r"void msa_index_score\((.*?)\)", src, re.S).group(1)
    names = [p.split()[-1] for p in params.split(",")]
    assert names == list(signature.INPUT_NAMES) + [signature.OUTPUT[0], "workspace", "tiling"]


def test_pynative_runner_launch_order():
    src = _read("aclnn_adapter", "pyboost_msa_index_score.cpp")
    launch = re.search(r"LAUNCH_ACLNN_FUNC\((\w+),(.*?)\)\);", src, re.S)
    assert launch.group(1) == signature.ACLNN_OP
    args = [a.strip() for a in launch.group(2).split(",")]
    assert args == list(signature.INPUT_NAMES) + list(signature.ACLNN_ATTR_NAMES) + [signature.OUTPUT[0]]
    entry = re.search(r"ms::Tensor msa_index_score\((.*?)\) \{", src, re.S).group(1)
    assert [p.split()[-1].lstrip("&") for p in entry.split(",")] == \
        list(signature.INPUT_NAMES) + list(signature.ACLNN_ATTR_NAMES)


def test_header_parameter_names_follow_spec():
    src = _read("aclnn_adapter", "aclnn_msa_index_score.h")
    decl = re.search(r"aclnnStatus aclnnMsaIndexScoreGetWorkspaceSize\((.*?)\);", src, re.S).group(1)
    names = [p.split()[-1].lstrip("*") for p in decl.split(",")]
    assert names == ["query", "key", "blockTableOptional", "scaleOptional", "attenMaskOptional",
                     "actualSeqQlenOptional", "actualSeqKlenOptional", "startLoc", "layoutKeyOptional", "sparseMode",
                     "initBlocks", "localBlocks", "score", "workspaceSize", "executor"]


def test_vendor_name():
    with open(os.path.join(REPO, "ascendc", "CMakePresets.overrides.json")) as f:
        assert json.load(f)["cacheVariables"]["vendor_name"] == signature.VENDOR
    assert f'VENDOR="{signature.VENDOR}"' in _read("ascendc", "build.sh")


def test_build_without_cann_says_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")}
    env["PATH"] = "/usr/bin:/bin"  # no msopgen on it
    res = subprocess.run(["bash", os.path.join(REPO, "ascendc", "build.sh"), "--build-dir", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2
    assert "ASCEND_HOME_PATH is not set" in res.stderr and "msopgen" in res.stderr
    assert not any(tmp_path.iterdir())  # nothing was generated


def test_build_rejects_a_wrong_toolkit_path(tmp_path):
    env = dict(os.environ, ASCEND_HOME_PATH=str(tmp_path / "no-cann"), PATH="/usr/bin:/bin")
    res = subprocess.run(["bash", os.path.join(REPO, "ascendc", "build.sh"), "--check"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert res.returncode == 2 and "is not a directory" in res.stderr


@pytest.mark.skipif(not os.environ.get("ASCEND_HOME_PATH"), reason="needs an Ascend NPU and CANN")
def test_build_with_cann(tmp_path):
    res = subprocess.run(["bash", os.path.join(REPO, "ascendc", "build.sh"), "--no-install", "--build-dir",
                          str(tmp_path)], capture_output=True, text=True, timeout=3600)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]


def _fake_cann(tmp_path, version):
    """A toolkit folder with only a version file and an msopgen that records its arguments and fails."""
    home = tmp_path / "cann"
    (home / f"{os.uname().machine}-linux").mkdir(parents=True)
    (home / f"{os.uname().machine}-linux" / "ascend_toolkit_install.info").write_text(f"package_name=Ascend-cann-toolkit\nversion={version}\n")
    tool = home / "python" / "site-packages" / "bin" / "msopgen"
    tool.parent.mkdir(parents=True)
    tool.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/msopgen_args\nexit 3\n")
    tool.chmod(0o755)
    return dict(os.environ, ASCEND_HOME_PATH=str(home), PATH="/usr/bin:/bin")


@pytest.mark.parametrize("version", ["8.1.RC1", "8.0.0", "8.2.RC1.alpha002", "seven"])
def test_build_requires_cann_8_2_rc1(tmp_path, version):
    res = subprocess.run(["bash", os.path.join(REPO, "ascendc", "build.sh"), "--check"], capture_output=True,
                         text=True, env=_fake_cann(tmp_path, version), timeout=60)
    assert res.returncode == 2 and "8.2.RC1" in res.stderr and version in res.stderr


@pytest.mark.parametrize("version", ["8.2.RC1", "8.2.0", "8.5.0", "9.0.RC1"])
def test_build_accepts_cann_from_8_2_rc1(tmp_path, version):
    res = subprocess.run(["bash", os.path.join(REPO, "ascendc", "build.sh"), "--check"], capture_output=True,
                         text=True, env=_fake_cann(tmp_path, version), timeout=60)
    assert res.returncode == 0, res.stderr


def test_msopgen_gets_the_framework_flag(tmp_path):
    # MindSpore calls the aclnn API: no framework plugin (msopgen's default is TensorFlow's).
    res = subprocess.run(["bash", os.path.join(REPO, "ascendc", "build.sh"), "--no-install", "--build-dir",
                          str(tmp_path / "build")], capture_output=True, text=True,
                         env=_fake_cann(tmp_path, "8.2.RC1"), timeout=60)
    assert res.returncode != 0  # the fake msopgen fails
    args = (tmp_path / "msopgen_args").read_text().split()
    assert args[args.index("-f") + 1] == "pytorch" and args[0] == "gen"


def test_host_code_logs_through_cann(tmp_path):
    """op_host logs errors with CANN's host log (msa_host_log.h), never stdio of its own."""
    op_host = os.path.join(REPO, "ascendc", "msa_index_score", "op_host")
    for name in os.listdir(op_host):
        if name.endswith((".cpp", ".cc")) or name in ("msa_index_score_io.h", "tiling_logic.h"):
            assert "printf(" not in _read("ascendc", "msa_index_score", "op_host", name), name
    # Without CANN's asc_cpu_log.h the header still compiles and reports on stderr.
    src = tmp_path / "log.cc"
    src.write_text('#include "msa_host_log.h"\nint main() { MSA_HOST_LOG_ERROR("node", "tiling", "why"); }\n')
    exe = tmp_path / "log"
    subprocess.run(["g++", "-std=c++17", f"-I{op_host}", str(src), "-o", str(exe)], check=True, timeout=120)
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert res.stderr.strip() == "[ms_msa] node tiling failed: why"
