"""usage_records becomes a ledger: its rows keep the tenant, session, run and agent ids without
foreign-key constraints, and lose the agent, session and run indexes that only the constraints'
checks and SET_NULL needed. A turn's usage insert no longer locks four parent rows (the tenant's
and the agent's shared by every concurrent run) nor writes three more indexes: 490 bytes of WAL
less per turn (bench/bench_wal.py)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0005_verbose_names'),
        ('agents', '0002_memoryfile_skill'),
        ('runs', '0003_run_session_index'),
    ]

    operations = [
        migrations.AlterField(
            model_name='usagerecord',
            name='agent',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='usage_records', to='agents.agent'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='run',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='usage_records', to='runs.run'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='session',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='usage_records', to='runs.session'),
        ),
        migrations.AlterField(
            model_name='usagerecord',
            name='tenant',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='usage_records', to='accounts.tenant'),
        ),
    ]
