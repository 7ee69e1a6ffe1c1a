"""``intrusion``: KDD Cup 1999 network intrusion detection, 10% training file, 5 classes.

File: ``intrusion/kddcup.data_10_percent.gz`` (494,021 rows, no header): the 41 features of
kddcup.names, then the connection's attack name with a trailing ``.`` (23 names). The names are
grouped into the standard 5 KDD'99 categories (training_attack_types of the KDD Cup site):

- dos: back, land, neptune, pod, smurf, teardrop
- probe: ipsweep, nmap, portsweep, satan
- r2l: ftp_write, guess_passwd, imap, multihop, phf, spy, warezclient, warezmaster
- u2r: buffer_overflow, loadmodule, perl, rootkit
- normal

Classes in alphabetical order: 0 = dos, 1 = normal, 2 = probe, 3 = r2l, 4 = u2r. This is also
SDGym's (frequency) order, so class 0 (dos, the majority) is the class the seeds undersample.
An attack name outside this list is an error.

``num_outbound_cmds`` (always 0 in the file) is dropped, as SDGym does: 40 features.

Kinds: ``protocol_type``, ``service`` and ``flag`` are categorical with the public value lists of
the KDD'99 data (3 protocols; the 70 services and 11 TCP flags of the full KDD'99 data, the value
lists of the NSL-KDD ``KDDTrain+.arff`` header; the 10% file uses 66 of the services). ``land``,
``logged_in``, ``root_shell``, ``is_host_login`` and ``is_guest_login`` are binary (the KDD Cup task
description defines each as "1 if …; 0 otherwise"). ``su_attempted`` is documented the same way
but the file also holds the value 2, so it stays numerical in [0, 2]. All other features are
numerical.

Bounds (never computed from the rows): the 15 rate features are fractions, [0, 1]. The other
counts have no documented range; benchmark clipping constants: duration [0, 60,000] s, src_bytes
and dst_bytes [0, 1e9], count and srv_count [0, 511] and dst_host_count and dst_host_srv_count
[0, 255] (the ranges these counters are known to take in the published KDD'99 data; no
document states them), wrong_fragment and urgent
[0, 10], hot [0, 100], num_failed_logins [0, 10], num_compromised and num_root [0, 1,000],
num_file_creations [0, 100], num_shells and num_access_files [0, 10].

Protocols: both read all 494,021 rows (DP-HP concatenates SDGym's intrusion train and test, which
together are the whole file; DP-MERF's SDGym 'train' part alone is 394,021 rows). Split 70/30
(seeds); training-only undersampling of class 0 (dos) at 0.03 (DP-HP grid).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from bench.core.data import ColumnKind, PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling
from datasets.tabular_io import binary, categorical, code_labels, features, numerical, read_csv

DATA_FILE = DataFile(
    "intrusion",
    "kddcup.data_10_percent.gz",
    "f8c8267ebcd9c0ed1fd7d6277fe5bfff8732e9b7db8e61b873542b2a534b6f9a",
    "http://kdd.ics.uci.edu/databases/kddcup99/kddcup.data_10_percent.gz",
    "the UCI KDD Archive, KDD Cup 1999 Data (kdd.ics.uci.edu/databases/kddcup99/kddcup99.html)",
)

PROTOCOLS = ("icmp", "tcp", "udp")
SERVICES = (
    "aol",
    "auth",
    "bgp",
    "courier",
    "csnet_ns",
    "ctf",
    "daytime",
    "discard",
    "domain",
    "domain_u",
    "echo",
    "eco_i",
    "ecr_i",
    "efs",
    "exec",
    "finger",
    "ftp",
    "ftp_data",
    "gopher",
    "harvest",
    "hostnames",
    "http",
    "http_2784",
    "http_443",
    "http_8001",
    "imap4",
    "IRC",
    "iso_tsap",
    "klogin",
    "kshell",
    "ldap",
    "link",
    "login",
    "mtp",
    "name",
    "netbios_dgm",
    "netbios_ns",
    "netbios_ssn",
    "netstat",
    "nnsp",
    "nntp",
    "ntp_u",
    "other",
    "pm_dump",
    "pop_2",
    "pop_3",
    "printer",
    "private",
    "red_i",
    "remote_job",
    "rje",
    "shell",
    "smtp",
    "sql_net",
    "ssh",
    "sunrpc",
    "supdup",
    "systat",
    "telnet",
    "tftp_u",
    "tim_i",
    "time",
    "urh_i",
    "urp_i",
    "uucp",
    "uucp_path",
    "vmnet",
    "whois",
    "X11",
    "Z39_50",
)
FLAGS = ("OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH")

RATE = (0, 1)
# The 41 features of kddcup.names in file order; None marks the dropped column.
FILE_COLUMNS = (
    numerical("duration", 0, 60_000),
    categorical("protocol_type", PROTOCOLS),
    categorical("service", SERVICES),
    categorical("flag", FLAGS),
    numerical("src_bytes", 0, 1e9),
    numerical("dst_bytes", 0, 1e9),
    binary("land"),
    numerical("wrong_fragment", 0, 10),
    numerical("urgent", 0, 10),
    numerical("hot", 0, 100),
    numerical("num_failed_logins", 0, 10),
    binary("logged_in"),
    numerical("num_compromised", 0, 1_000),
    binary("root_shell"),
    numerical("su_attempted", 0, 2),
    numerical("num_root", 0, 1_000),
    numerical("num_file_creations", 0, 100),
    numerical("num_shells", 0, 10),
    numerical("num_access_files", 0, 10),
    None,  # num_outbound_cmds: constant 0, dropped as in SDGym
    binary("is_host_login"),
    binary("is_guest_login"),
    numerical("count", 0, 511),
    numerical("srv_count", 0, 511),
    numerical("serror_rate", *RATE),
    numerical("srv_serror_rate", *RATE),
    numerical("rerror_rate", *RATE),
    numerical("srv_rerror_rate", *RATE),
    numerical("same_srv_rate", *RATE),
    numerical("diff_srv_rate", *RATE),
    numerical("srv_diff_host_rate", *RATE),
    numerical("dst_host_count", 0, 255),
    numerical("dst_host_srv_count", 0, 255),
    numerical("dst_host_same_srv_rate", *RATE),
    numerical("dst_host_diff_srv_rate", *RATE),
    numerical("dst_host_same_src_port_rate", *RATE),
    numerical("dst_host_srv_diff_host_rate", *RATE),
    numerical("dst_host_serror_rate", *RATE),
    numerical("dst_host_srv_serror_rate", *RATE),
    numerical("dst_host_rerror_rate", *RATE),
    numerical("dst_host_srv_rerror_rate", *RATE),
)
COLUMNS = tuple(column for column in FILE_COLUMNS if column is not None)
SOURCES = [j for j, column in enumerate(FILE_COLUMNS) if column is not None]
N_FILE_COLUMNS = len(FILE_COLUMNS) + 1

CLASSES = ("dos", "normal", "probe", "r2l", "u2r")
ATTACK_GROUPS = {
    "dos": ("back", "land", "neptune", "pod", "smurf", "teardrop"),
    "normal": ("normal",),
    "probe": ("ipsweep", "nmap", "portsweep", "satan"),
    "r2l": ("ftp_write", "guess_passwd", "imap", "multihop", "phf", "spy", "warezclient", "warezmaster"),
    "u2r": ("buffer_overflow", "loadmodule", "perl", "rootkit"),
}
ATTACK_CLASS = {name: CLASSES.index(group) for group, names in ATTACK_GROUPS.items() for name in names}

SCHEMA = Schema(
    columns=COLUMNS,
    label="attack_category",
    classes=CLASSES,
    public_facts=(
        PublicFact("published_rows", 494_021, "KDD Cup 1999: kddcup.data_10_percent holds 494,021 connections"),
    ),
)


def read(data_dir: Path | None) -> Table:
    path = fetch(DATA_FILE, data_dir)
    dtypes = {
        j: ("category" if column is not None and column.kind == ColumnKind.CATEGORICAL else np.float64)
        for j, column in enumerate(FILE_COLUMNS)
    }
    dtypes[len(FILE_COLUMNS)] = "category"
    frame = read_csv(
        path,
        N_FILE_COLUMNS,
        "KDD Cup 1999 kddcup.data_10_percent",
        header=None,
        dtype=dtypes,
        keep_default_na=False,
        na_values=[],
    )
    x = features(frame, COLUMNS, SOURCES, path)
    y = code_labels(frame[len(FILE_COLUMNS)], ATTACK_CLASS, "attack", path, strip=".")
    return Table(x, y)


INTRUSION = TabularDataset(
    name="intrusion",
    description="KDD Cup 1999 intrusion detection (10% file), 5 classes: 494,021 rows, 40 features",
    schema=SCHEMA,
    read=read,
    test_fraction=0.3,
    split_source="70/30 as in DP-MERF and DP-HP "
    "(github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py, "
    "github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)",
    undersampling=Undersampling(
        0,
        0.03,
        "DP-HP grid "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py): keep 0.03 of class 0, dos (DP-MERF Table 4: 0.1)",
    ),
)
