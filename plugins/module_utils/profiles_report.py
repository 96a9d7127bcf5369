# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The profiles report: every Kubeflow Profile with its owner, its contributors (those kfocp
gives from the inventory and those the owner added through the dashboard), its quota and what is
used of it.

Pure functions: live Profiles, RoleBindings and ResourceQuotas in, plain data out.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o

# The ResourceQuota the profile controller makes from spec.resourceQuotaSpec.
QUOTA_NAME = "kf-resource-quota"
SOURCE_LABEL = "kfocp.io/profile-source"
SOURCES = {"declared": "declared", "auto": "automatic"}
CONTRIBUTOR_ROLES = ("edit", "view")


def _meta(obj):
    return (obj or {}).get("metadata") or {}


def _source(profile, instance):
    """declared or automatic (kfocp made it), another install's, or self-service (its owner or an
    admin made it, outside kfocp)."""
    labels = _meta(profile).get("labels") or {}
    if labels.get(o.MANAGED_BY) != o.MANAGER:
        return "self-service"
    if labels.get(o.INSTANCE) != instance:
        return "kfocp instance %s" % labels.get(o.INSTANCE)
    return SOURCES.get(labels.get(SOURCE_LABEL), "declared")


def _contributors(rolebindings):
    """The dashboard-style bindings of one namespace (annotated user or group, and role edit or
    view): the owner's own binding (role admin) is not a contributor."""
    found = []
    for binding in rolebindings:
        meta = _meta(binding)
        annotations = meta.get("annotations") or {}
        role = annotations.get("role")
        if role not in CONTRIBUTOR_ROLES:
            continue
        if annotations.get("user"):
            kind, name = "User", annotations["user"]
        elif annotations.get("group"):
            kind, name = "Group", annotations["group"]
        else:
            continue
        by = "kfocp" if (meta.get("labels") or {}).get(o.MANAGED_BY) == o.MANAGER else "owner"
        found.append({"kind": kind, "name": name, "role": role, "by": by, "binding": meta.get("name")})
    return sorted(found, key=lambda c: (c["kind"], c["name"], c["role"], c["by"]))


def _quota(profile, quotas):
    """{resource: {hard, used}}: the ResourceQuota's status when it exists (what the API server
    enforces and counts), else the Profile's spec with nothing counted yet."""
    name = _meta(profile).get("name")
    live = quotas.get(name)
    spec = ((profile.get("spec") or {}).get("resourceQuotaSpec") or {}).get("hard") or {}
    status = (live or {}).get("status") or {}
    hard = status.get("hard") or ((live or {}).get("spec") or {}).get("hard") or spec
    used = status.get("used") or {}
    return dict((str(k), {"hard": str(v), "used": str(used[k]) if k in used else None}) for k, v in hard.items())


def report(profiles, rolebindings=(), quotas=(), instance="kfocp"):
    """One row per Profile, sorted by name:
    {name, owner: {kind, name}, source, contributors: [{kind, name, role, by}], quota: {resource:
    {hard, used}}, quota_object: whether the namespace's ResourceQuota exists, deleting: bool}.
    `quotas` are ResourceQuotas; only those named kf-resource-quota count."""
    bindings = {}
    for binding in rolebindings or ():
        bindings.setdefault(_meta(binding).get("namespace"), []).append(binding)
    by_namespace = dict((_meta(q).get("namespace"), q) for q in quotas or () if _meta(q).get("name") == QUOTA_NAME)
    rows = []
    for profile in sorted(profiles or (), key=lambda p: _meta(p).get("name") or ""):
        meta = _meta(profile)
        owner = (profile.get("spec") or {}).get("owner") or {}
        rows.append({
            "name": meta.get("name"),
            "owner": {"kind": owner.get("kind", ""), "name": owner.get("name", "")},
            "source": _source(profile, instance),
            "contributors": _contributors(bindings.get(meta.get("name"), [])),
            "quota": _quota(profile, by_namespace),
            "quota_object": meta.get("name") in by_namespace,
            "deleting": bool(meta.get("deletionTimestamp")),
        })
    return {"profiles": rows, "count": len(rows)}


def _quota_cell(row):
    if not row["quota"]:
        return "no quota (unlimited)"
    cells = []
    for resource in sorted(row["quota"]):
        entry = row["quota"][resource]
        cells.append("%s %s/%s" % (resource, entry["used"] if entry["used"] is not None else "-", entry["hard"]))
    return ", ".join(cells) + ("" if row["quota_object"] else " (no ResourceQuota yet)")


def table(data):
    """The report as fixed-width lines: profile, owner, source, contributors, quota used/hard."""
    header = ("PROFILE", "OWNER", "SOURCE", "CONTRIBUTORS (role, added by)", "QUOTA (used/hard)")
    rows = []
    for row in data.get("profiles") or []:
        contributors = ", ".join("%s%s (%s, %s)" % ("group " if c["kind"] == "Group" else "", c["name"], c["role"], c["by"])
                                 for c in row["contributors"]) or "-"
        owner = ("group " if row["owner"]["kind"] == "Group" else "") + row["owner"]["name"]
        rows.append((row["name"] + (" (deleting)" if row["deleting"] else ""), owner, row["source"], contributors,
                     _quota_cell(row)))
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header) - 1)]
    lines = []
    for cells in [header] + rows:
        lines.append("  ".join([cell.ljust(width) for cell, width in zip(cells, widths)] + [cells[-1]]).rstrip())
    lines.append("%d profile(s)" % len(rows))
    return lines
