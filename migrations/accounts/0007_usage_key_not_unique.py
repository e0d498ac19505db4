"""A usage row's dedupe key is no longer unique-indexed: the turn's fence alone makes a turn's
rows land once (accounts/models.py, UsageRecord), and the index cost every turn an insert."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0006_usage_ledger'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='usagerecord',
            name='usage_records_dedupe_key_key',
        ),
    ]
