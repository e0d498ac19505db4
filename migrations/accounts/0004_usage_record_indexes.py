"""usage_records gets a row per model call, so every index is written at every turn; two served
no read. The tenant's own index is the prefix of (tenant, created_at). The LIKE index Django adds
beside a unique CharField's is gone with ``unique=True``: the same unique constraint, under the
same name, is now declared as a constraint. Both are dropped by name, so nothing else is
rebuilt (Django's AlterField would drop and re-validate the tenant's foreign key)."""

import django.db.models.deletion
from django.db import migrations, models

TENANT_INDEX = "usage_records_tenant_id_6fd75aa8"  # Django's names for them
LIKE_INDEX = "usage_records_dedupe_key_f1749b91_like"


def drop_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":  # SQLite has no LIKE index
        schema_editor.execute(f"DROP INDEX IF EXISTS {LIKE_INDEX}")


def create_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE INDEX {LIKE_INDEX} ON usage_records "
                              "(dedupe_key varchar_pattern_ops)")


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0003_quota_holds'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX IF EXISTS {TENANT_INDEX}",
                    reverse_sql=f"CREATE INDEX {TENANT_INDEX} ON usage_records (tenant_id)"),
                migrations.RunPython(drop_like_index, create_like_index),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='usagerecord',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='usage_records', to='accounts.tenant'),
                ),
                migrations.AlterField(
                    model_name='usagerecord',
                    name='dedupe_key',
                    field=models.CharField(max_length=120),
                ),
                migrations.AddConstraint(
                    model_name='usagerecord',
                    constraint=models.UniqueConstraint(fields=('dedupe_key',), name='usage_records_dedupe_key_key'),
                ),
            ],
        ),
    ]
